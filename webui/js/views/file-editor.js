// The Files panel's editor: a text file of the work folder opened beside the list, with
// syntax highlighting (../code-editor.js), saved with the version it was loaded at. When
// the file changed meanwhile the server refuses (409): the editor says so in plain words
// and offers to reload the file from disk or overwrite it. A file too big to edit, or not
// text, is offered for download instead. Unsaved changes are never dropped without asking
// (closing the editor or leaving the page), nor taken for saved when typed while a save
// was on its way; one save is sent at a time.

import { h } from "../dom.js";
import { createEditor } from "../code-editor.js";
import { downloadUrl, sizeText } from "../stores/files.js";
import { confirmDialog } from "./dialogs.js";

/** Mount the editor in the panel's `body`; `shown()` is told when it opens or closes. */
export function mountFileEditor({ files, body, shown }) {
  const title = h("h3", { class: "files-preview-title", id: "files-editor-title",
    testid: "files-editor-title" });
  const state = h("span", { class: "small-text muted", testid: "files-editor-state", role: "status" });
  const save = h("button", { type: "button", class: "btn small primary", testid: "files-editor-save",
    "aria-keyshortcuts": "Control+S", title: "Save (Ctrl+S)", onclick: () => store() }, "Save");
  const closeBtn = h("button", { type: "button", class: "btn small", testid: "files-editor-close",
    onclick: () => close() }, "Close editor");
  const problem = h("p", { class: "error-text", testid: "files-editor-error", role: "alert", hidden: true });
  const conflictText = h("p", { testid: "files-conflict-text" });
  const reload = h("button", { type: "button", class: "btn small", testid: "files-conflict-reload",
    onclick: () => reloadFromDisk() }, "Reload from disk");
  const overwrite = h("button", { type: "button", class: "btn small danger-text",
    testid: "files-conflict-overwrite", onclick: () => store(true) }, "Overwrite with mine");
  const conflict = h("div", { class: "files-conflict", testid: "files-conflict", role: "alert", hidden: true },
    conflictText, h("div", { class: "files-conflict-actions" }, reload, overwrite));
  const holder = h("div", { class: "files-editor-body", testid: "files-editor-body" });
  const section = h("section", { class: "files-editor", testid: "files-editor",
    "aria-labelledby": "files-editor-title", hidden: true },
  h("header", { class: "files-preview-head" }, title, state, save, closeBtn), problem, conflict, holder);
  body.append(section);

  let open = null; // {where, name, version, editor, dirty, saving, again}

  // Leaving the page (closing the tab, reloading) with changes not saved asks first, as
  // closing the editor does (in the browser's own words: a page may not set them).
  window.addEventListener("beforeunload", (event) => {
    if (!open?.dirty) return;
    event.preventDefault();
    event.returnValue = ""; // browsers before the standard ask only when it is set
  });

  /** The server's words as they are (they may start with a file's name), ended by a stop. */
  function full(text) {
    const words = String(text || "").trim();
    return !words || /[.!?]$/.test(words) ? words : `${words}.`;
  }

  function say(box, text) {
    box.textContent = full(text);
    box.hidden = !text;
  }

  /** Instead of the editor: why this file is not opened, and its download link. */
  function offerDownload(where, name, why) {
    holder.replaceChildren(h("p", { class: "muted", testid: "files-editor-refused" }, full(why)),
      h("a", { class: "btn small", href: downloadUrl(where), download: name,
        testid: "files-editor-download" }, `Download ${name}`));
    save.hidden = true;
  }

  /** Open `entry` (a row of the listing) for editing; false when the person kept the one open. */
  async function edit(entry) {
    if (!(await close())) return false;
    const where = files.where(entry.path);
    title.textContent = `Edit ${entry.name}`;
    state.textContent = "";
    say(problem, "");
    conflict.hidden = true;
    save.hidden = false;
    save.disabled = true;
    section.hidden = false;
    shown(true);
    if (files.editLimit && entry.size > files.editLimit) {
      offerDownload(where, entry.name, `${entry.name} is larger than the ${sizeText(files.editLimit)} `
        + "the editor opens: download it to change it with a program of your own");
      closeBtn.focus();
      return true;
    }
    state.textContent = "Loading…";
    holder.replaceChildren();
    const current = { where, name: entry.name, version: "", editor: null, dirty: false,
      saving: false, again: null };
    open = current;
    try {
      const loaded = await files.loadText(where);
      if (open !== current) return true; // another file was opened meanwhile
      current.version = loaded.version;
      current.editor = await createEditor(holder, { text: loaded.text, filename: entry.name,
        label: `Text of ${entry.name}`, onChange: () => changed(current), onSave: () => store() });
      if (open !== current) {
        current.editor.destroy();
        return true;
      }
      state.textContent = "";
      current.editor.focus();
    } catch (err) {
      if (open !== current) return true;
      state.textContent = "";
      if (err.status === 413 || err.status === 415) offerDownload(where, entry.name, err.message);
      else say(problem, err.message);
      closeBtn.focus();
    }
    return true;
  }

  function changed(current) {
    if (current.dirty) return;
    current.dirty = true;
    save.disabled = false;
    state.textContent = "Not saved";
  }

  /** Save the open file; `force` writes over a version changed on disk (after a conflict).
   * One save at a time: asked again while one is on its way, it runs when that one
   * answers (with the version it made), unless the text is then saved already. */
  async function store(force = false) {
    const current = open;
    if (!current?.editor) return;
    if (current.saving) {
      current.again = { force: Boolean(current.again?.force || force) };
      return;
    }
    current.saving = true;
    state.textContent = "Saving…";
    const sent = current.editor.text(); // what is on disk once this answers: typing goes on
    try {
      const saved = await files.saveText(current.where, sent, current.version, force);
      current.version = saved.version;
      if (open !== current) return; // closed (its changes let go) while it was on its way
      current.dirty = current.editor.text() !== sent;
      save.disabled = !current.dirty;
      const resolved = !conflict.hidden;
      conflict.hidden = true;
      say(problem, "");
      state.textContent = current.dirty ? "Not saved: changed while saving"
        : `Saved (${sizeText(saved.size)})`;
      if (resolved) current.editor.focus(); // the button pressed is gone: back to the text
      files.open().catch(() => {}); // the list's size and time; a refusal there is not this save's
    } catch (err) {
      current.again = null; // a refused save is not sent again on its own
      if (open !== current) return;
      state.textContent = "Not saved";
      if (err.status === 409) {
        conflictText.textContent = full(err.message);
        reload.hidden = err.data?.current === ""; // deleted meanwhile: nothing to reload
        overwrite.textContent = reload.hidden ? "Save it anew" : "Overwrite with mine";
        conflict.hidden = false;
        (reload.hidden ? overwrite : reload).focus();
      } else say(problem, err.message);
    } finally {
      current.saving = false;
    }
    const again = current.again;
    current.again = null;
    if (again && current.dirty && open === current) await store(again.force);
  }

  /** After a conflict: the file as it is on disk now, in place of the changes. */
  async function reloadFromDisk() {
    const current = open;
    if (!current?.editor) return;
    try {
      const loaded = await files.loadText(current.where);
      current.editor.setText(loaded.text);
      current.version = loaded.version;
      current.dirty = false;
      save.disabled = true;
      conflict.hidden = true;
      say(problem, "");
      state.textContent = "Reloaded from disk";
      current.editor.focus();
    } catch (err) {
      say(problem, err.message);
    }
  }

  /** Close the editor, asking first when changes are not saved (unless `force`: the file
   * was deleted from the list); false when kept open. */
  async function close({ force = false } = {}) {
    if (open?.dirty && !force) {
      const drop = await confirmDialog(`Discard your changes to ${open.name}?`,
        "They are not saved. Close the editor without saving them?",
        { okLabel: "Discard changes", cancelLabel: "Keep editing", danger: true });
      if (!drop) {
        open?.editor?.focus();
        return false;
      }
    }
    open?.editor?.destroy();
    open = null;
    holder.replaceChildren();
    if (!section.hidden) {
      section.hidden = true;
      shown(false);
    }
    return true;
  }

  return { edit, close, dirty: () => Boolean(open?.dirty), path: () => open?.where.path ?? null };
}
