// The CodeMirror 6 parts the file editor uses, bundled by build.sh into ../codemirror.js
// (one ES module, no bare imports, so the page loads it without a build step of its own).
export { basicSetup } from "codemirror";
export { EditorState, Compartment } from "@codemirror/state";
export { EditorView, keymap } from "@codemirror/view";
export { HighlightStyle, StreamLanguage, syntaxHighlighting } from "@codemirror/language";
export { tags } from "@lezer/highlight";
export { javascript } from "@codemirror/lang-javascript";
export { python } from "@codemirror/lang-python";
export { markdown } from "@codemirror/lang-markdown";
export { json } from "@codemirror/lang-json";
export { html } from "@codemirror/lang-html";
export { css } from "@codemirror/lang-css";
export { yaml } from "@codemirror/lang-yaml";
export { xml } from "@codemirror/lang-xml";
export { shell } from "@codemirror/legacy-modes/mode/shell";
export { toml } from "@codemirror/legacy-modes/mode/toml";
export { dockerFile } from "@codemirror/legacy-modes/mode/dockerfile";
export { diff } from "@codemirror/legacy-modes/mode/diff";
export { properties } from "@codemirror/legacy-modes/mode/properties";
export { c, cpp, java } from "@codemirror/legacy-modes/mode/clike";
export { go } from "@codemirror/legacy-modes/mode/go";
export { rust } from "@codemirror/legacy-modes/mode/rust";
