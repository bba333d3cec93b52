// A code editor over the vendored CodeMirror 6 (vendor/codemirror/, see VERSIONS.md):
// syntax highlighting chosen from the file's name, in the page's own colours, Ctrl/Cmd+S
// to save. The bundle is loaded the first time a file is edited, never with the page.
// Tab is left to move the focus (CodeMirror binds it only when asked), so the keyboard
// never gets stuck in the editor.
//
// The editor lives in a shadow root: CodeMirror writes its styles at run time, into a
// <style> element in a document (which the page's Content-Security-Policy, style-src
// 'self', refuses) but into a constructed stylesheet in a shadow root (which it allows).
// So its looks are set here, as a CodeMirror theme, not in css/files.css.

let bundle = null;

function load() {
  bundle ??= import("../vendor/codemirror/codemirror.js").catch((err) => {
    bundle = null; // a failed load (the server went away) may be tried again
    throw new Error(`the editor could not be loaded (${err.message}); reload the page and try again`);
  });
  return bundle;
}

/** File suffixes (or whole names) → how each is highlighted. */
const LANGUAGES = {
  js: (cm) => cm.javascript(), mjs: (cm) => cm.javascript(), cjs: (cm) => cm.javascript(),
  jsx: (cm) => cm.javascript({ jsx: true }), ts: (cm) => cm.javascript({ typescript: true }),
  tsx: (cm) => cm.javascript({ jsx: true, typescript: true }),
  py: (cm) => cm.python(), pyi: (cm) => cm.python(),
  md: (cm) => cm.markdown(), markdown: (cm) => cm.markdown(),
  json: (cm) => cm.json(), jsonl: (cm) => cm.json(), ipynb: (cm) => cm.json(),
  html: (cm) => cm.html(), htm: (cm) => cm.html(),
  css: (cm) => cm.css(), yaml: (cm) => cm.yaml(), yml: (cm) => cm.yaml(),
  xml: (cm) => cm.xml(), svg: (cm) => cm.xml(),
  sh: (cm) => cm.StreamLanguage.define(cm.shell), bash: (cm) => cm.StreamLanguage.define(cm.shell),
  zsh: (cm) => cm.StreamLanguage.define(cm.shell),
  toml: (cm) => cm.StreamLanguage.define(cm.toml),
  dockerfile: (cm) => cm.StreamLanguage.define(cm.dockerFile),
  diff: (cm) => cm.StreamLanguage.define(cm.diff), patch: (cm) => cm.StreamLanguage.define(cm.diff),
  ini: (cm) => cm.StreamLanguage.define(cm.properties),
  cfg: (cm) => cm.StreamLanguage.define(cm.properties),
  env: (cm) => cm.StreamLanguage.define(cm.properties),
  properties: (cm) => cm.StreamLanguage.define(cm.properties),
  c: (cm) => cm.StreamLanguage.define(cm.c), h: (cm) => cm.StreamLanguage.define(cm.c),
  cpp: (cm) => cm.StreamLanguage.define(cm.cpp), cc: (cm) => cm.StreamLanguage.define(cm.cpp),
  hpp: (cm) => cm.StreamLanguage.define(cm.cpp), java: (cm) => cm.StreamLanguage.define(cm.java),
  go: (cm) => cm.StreamLanguage.define(cm.go), rs: (cm) => cm.StreamLanguage.define(cm.rust),
};

function languageFor(cm, filename) {
  const name = filename.toLowerCase();
  const suffix = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1) : name;
  const make = LANGUAGES[suffix] ?? LANGUAGES[name];
  return make ? make(cm) : [];
}

/** The page's looks: its colours are the page's CSS variables (css/app.css), which pass
 * WCAG AA in both themes and follow a change of theme at once. */
function looks(cm) {
  const t = cm.tags;
  const colour = (name) => `var(--hl-${name})`;
  const highlight = cm.HighlightStyle.define([
    { tag: [t.keyword, t.operatorKeyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword,
      t.modifier, t.self], color: colour("keyword") },
    { tag: [t.function(t.definition(t.variableName)), t.function(t.variableName), t.className,
      t.typeName, t.heading], color: colour("title") },
    { tag: [t.number, t.bool, t.null, t.atom, t.unit], color: colour("number") },
    { tag: [t.string, t.special(t.string), t.regexp, t.escape, t.character], color: colour("string") },
    { tag: [t.standard(t.variableName), t.standard(t.name), t.macroName, t.annotation],
      color: colour("builtin") },
    { tag: [t.comment, t.lineComment, t.blockComment, t.docComment, t.meta, t.processingInstruction],
      color: colour("comment"), fontStyle: "italic" },
    { tag: [t.tagName, t.attributeName, t.propertyName, t.labelName], color: colour("name") },
    { tag: [t.list, t.quote, t.separator], color: colour("bullet") },
    { tag: t.heading, fontWeight: "600" },
    { tag: t.strong, fontWeight: "600" },
    { tag: t.emphasis, fontStyle: "italic" },
    { tag: [t.link, t.url], color: "var(--accent)", textDecoration: "underline" },
    { tag: t.invalid, color: "var(--err)" },
  ]);
  const theme = cm.EditorView.theme({
    "&": { flex: "1", minHeight: "0", fontSize: "13px", color: "var(--text)",
      backgroundColor: "var(--code-bg)", border: "1px solid var(--line)",
      borderRadius: "var(--radius)", overflow: "hidden" },
    "&.cm-focused": { outline: "2px solid var(--accent)", outlineOffset: "-2px" },
    ".cm-scroller": { overflow: "auto" },
    ".cm-content": { caretColor: "var(--text)" },
    ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--text)" },
    ".cm-gutters": { backgroundColor: "var(--panel-2)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
    ".cm-activeLine": { backgroundColor: "var(--code-tint)" },
    ".cm-activeLineGutter": { backgroundColor: "var(--hover)", color: "var(--text)" },
    "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection":
      { backgroundColor: "var(--hover)" },
    ".cm-panels": { backgroundColor: "var(--panel)", color: "var(--text)" },
    ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--text)", border: "1px solid var(--line)" },
    ".cm-matchingBracket": { outline: "1px solid var(--muted)", backgroundColor: "transparent" },
  });
  return [theme, cm.syntaxHighlighting(highlight)];
}

/**
 * An editor in `parent` holding `text`. `label` names it for screen readers; `onChange()`
 * follows edits, `onSave()` is Ctrl/Cmd+S. Resolves with {text(), setText(t), focus(), destroy()}.
 */
export async function createEditor(parent, { text, filename, label, onChange, onSave }) {
  const cm = await load();
  const host = document.createElement("div");
  host.className = "code-editor-host";
  parent.append(host);
  const root = host.attachShadow({ mode: "open" });
  const extensions = [
    // First, so it comes before the setup's own keys (the browser's "save page" never opens).
    cm.keymap.of([{ key: "Mod-s", preventDefault: true, run: () => { onSave(); return true; } }]),
    cm.basicSetup,
    languageFor(cm, filename),
    cm.EditorView.lineWrapping,
    cm.EditorView.contentAttributes.of({ "aria-label": label }),
    cm.EditorView.updateListener.of((update) => {
      if (update.docChanged) onChange();
    }),
    looks(cm),
  ];
  // A file written with CRLF keeps its line ends (CodeMirror would make them "\n").
  if (text.includes("\r\n")) extensions.push(cm.EditorState.lineSeparator.of("\r\n"));
  const state = cm.EditorState.create({ doc: text, extensions });
  const view = new cm.EditorView({ state, parent: root, root });
  return {
    text: () => view.state.sliceDoc(), // joined by the file's own line ends (doc.toString() says "\n")
    setText(next) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: next } });
    },
    focus: () => view.focus(),
    destroy() {
      view.destroy();
      host.remove();
    },
  };
}
