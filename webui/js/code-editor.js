// A code editor over the vendored CodeMirror 6 (vendor/codemirror/, see VERSIONS.md):
// syntax highlighting chosen from the file's name, the page's light or dark theme, Ctrl/Cmd+S
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

/**
 * An editor in `parent` holding `text`. `label` names it for screen readers; `onChange()`
 * follows edits, `onSave()` is Ctrl/Cmd+S. Resolves with {text(), setText(t), focus(), destroy()}.
 */
export async function createEditor(parent, { text, filename, label, onChange, onSave }) {
  const cm = await load();
  const dark = document.documentElement.dataset.theme === "dark";
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
    dark ? cm.oneDark : [],
    cm.EditorView.theme({
      "&": { flex: "1", minHeight: "0", fontSize: "13px", border: "1px solid var(--line)",
        borderRadius: "var(--radius)", overflow: "hidden" },
      "&.cm-focused": { outline: "2px solid var(--accent)", outlineOffset: "1px" },
      ".cm-scroller": { overflow: "auto" },
    }),
  ];
  // A file written with CRLF keeps its line ends (CodeMirror would make them "\n").
  if (text.includes("\r\n")) extensions.push(cm.EditorState.lineSeparator.of("\r\n"));
  const state = cm.EditorState.create({ doc: text, extensions });
  const view = new cm.EditorView({ state, parent: root, root });
  return {
    text: () => view.state.doc.toString(),
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
