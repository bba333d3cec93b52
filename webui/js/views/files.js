// The Files panel: browse the work folder or the open chat's folder; upload (with
// progress), download, rename, make a folder or a new file, delete (after a confirmation), edit text
// files (./file-editor.js), and preview text, markdown (sanitized, as in the log) and images. The server refuses
// what leads out of the folder; its words are shown in the panel's error line.

import { byTestId, fullDate, h } from "../dom.js";
import { renderMarkdown } from "../render.js";
import { downloadUrl, rawUrl, sizeText } from "../stores/files.js";
import { showSandbox } from "../sandbox-status.js";
import { confirmDialog, promptDialog } from "./dialogs.js";
import { mountFileEditor } from "./file-editor.js";

export function mountFiles({ files, chats }) {
  const dialog = byTestId("files");
  const rootSelect = byTestId("files-root");
  const crumbs = byTestId("files-crumbs");
  const list = byTestId("files-list");
  const empty = byTestId("files-empty");
  const errorLine = byTestId("files-error");
  const upload = byTestId("files-upload");
  const uploadLabel = upload.closest("label");
  const newFolder = byTestId("files-new-folder");
  const newFile = byTestId("files-new-file");
  const limit = byTestId("files-limit");
  const sandbox = byTestId("files-sandbox");
  const progress = byTestId("files-progress");
  const progressBar = progress.querySelector("progress");
  const progressText = byTestId("files-progress-text");
  const gotoForm = byTestId("files-goto-form");
  const gotoInput = byTestId("files-goto");
  const preview = byTestId("files-preview");
  const previewTitle = byTestId("files-preview-title");
  const previewBody = byTestId("files-preview-body");
  const editor = mountFileEditor({ files, body: dialog.querySelector(".files-body"),
    shown: (on) => (on ? closePreview() : list.focus()) }); // closed: the focus back to the list

  function showError(err) {
    errorLine.textContent = err ? err.message || String(err) : "";
    errorLine.hidden = !err;
  }

  /** Run an action; its failure shows in the panel, its success clears the last error. */
  async function attempt(action) {
    try {
      await action();
      showError(null);
      return true;
    } catch (err) {
      showError(err);
      return false;
    }
  }

  function render() {
    rootSelect.value = files.root;
    renderCrumbs();
    gotoInput.value = files.path;
    uploadLabel.hidden = !files.writable;
    newFolder.hidden = !files.writable;
    newFile.hidden = !files.writable;
    const about = files.writable && files.uploadLimit
      ? `Largest upload: ${sizeText(files.uploadLimit)}.` : "Read-only here: browse and download.";
    limit.textContent = files.truncated
      ? `${about} Only the first ${files.entries.length} entries are listed.` : about;
    showSandbox(sandbox, files.root === "work" ? files.sandbox : null);
    list.replaceChildren(...files.entries.map(row));
    empty.hidden = files.entries.length > 0;
  }

  function renderCrumbs() {
    const parts = files.path ? files.path.split("/") : [];
    const top = files.root === "work" ? "Work folder" : "This chat's folder";
    const items = [{ name: top, path: "" }, ...parts.map((name, i) => ({
      name, path: parts.slice(0, i + 1).join("/"),
    }))];
    crumbs.replaceChildren(h("ol", {}, ...items.map((item, i) => {
      const last = i === items.length - 1;
      return h("li", {}, last
        ? h("span", { "aria-current": "location", testid: "files-crumb" }, item.name)
        : h("button", { type: "button", class: "link-btn", testid: "files-crumb",
          onclick: () => go(item.path) }, item.name));
    })));
  }

  function row(entry) {
    const where = files.where(entry.path);
    const isFolder = entry.kind === "folder";
    const meta = entry.kind === "outside" ? "a link leading outside this folder (or nowhere): not opened"
      : [isFolder ? "folder" : sizeText(entry.size), fullDate(entry.modified)].join(" · ");
    const name = entry.kind === "outside"
      ? h("span", { class: "files-name muted" }, entry.name)
      : h("button", { type: "button", class: "link-btn files-name", testid: "files-name",
        "aria-label": isFolder ? `Open folder ${entry.name}` : `Preview ${entry.name}`,
        onclick: () => (isFolder ? go(entry.path, true) : showPreview(entry)) },
      isFolder ? `${entry.name}/` : entry.name);
    const actions = h("div", { class: "files-actions" });
    if (entry.kind === "file") {
      actions.append(h("a", { class: "btn small", href: downloadUrl(where), download: entry.name,
        testid: "files-download", "aria-label": `Download ${entry.name}` }, "Download"));
    }
    if (files.writable && entry.kind === "file") {
      actions.append(h("button", { type: "button", class: "btn small", testid: "files-edit",
        "aria-label": `Edit ${entry.name}`, onclick: () => editor.edit(entry) }, "Edit"));
    }
    if (files.writable) {
      actions.append(
        h("button", { type: "button", class: "btn small", testid: "files-rename",
          "aria-label": `Rename ${entry.name}`, onclick: () => rename(entry) }, "Rename"),
        h("button", { type: "button", class: "btn small danger-text", testid: "files-delete",
          "aria-label": `Delete ${entry.name}`, onclick: () => remove(entry) }, "Delete"),
      );
    }
    return h("li", { class: "files-item", testid: "files-item", data: { path: entry.path, kind: entry.kind } },
      h("div", { class: "files-main" }, name, h("span", { class: "files-meta" }, meta)), actions);
  }

  /** Open folder `path`; a refused path shows why and the panel stays where it was. */
  async function go(path, focusList = false) {
    closePreview();
    const ok = await attempt(() => files.open(path));
    if (ok && focusList) list.focus();
  }

  async function showPreview(entry) {
    if (!(await editor.close())) return;
    const ok = await attempt(async () => {
      const shown = await files.preview(entry.path);
      previewTitle.textContent = entry.name;
      previewBody.replaceChildren();
      if (shown.kind === "image") {
        previewBody.append(h("img", { src: rawUrl(files.where(entry.path)), alt: entry.name,
          testid: "files-preview-image" }));
      } else if (shown.kind === "markdown") {
        const box = h("div", { class: "md", testid: "files-preview-markdown" });
        renderMarkdown(box, shown.text);
        previewBody.append(box);
      } else if (shown.kind === "text") {
        previewBody.append(h("pre", { class: "files-text", testid: "files-preview-text" }, shown.text));
      } else {
        previewBody.append(h("p", { class: "muted" },
          `No preview: this file is not text (${sizeText(shown.size)}). Download it to open it.`));
      }
      if (shown.truncated) {
        previewBody.append(h("p", { class: "muted small-text" },
          `Only the start is shown; the file is ${sizeText(shown.size)}. Download it for the rest.`));
      }
    });
    if (!ok) return;
    preview.hidden = false;
    previewBody.focus();
  }

  function closePreview() {
    preview.hidden = true;
    previewBody.replaceChildren();
  }

  async function rename(entry) {
    const name = await promptDialog(`Rename ${entry.name}`, entry.name, { okLabel: "Rename" });
    if (name === null || name === entry.name) return;
    closePreview();
    await attempt(() => files.rename(entry.path, name));
  }

  async function remove(entry) {
    const text = entry.kind === "folder"
      ? "The folder and everything in it will be deleted. This cannot be undone."
      : "This cannot be undone.";
    const yes = await confirmDialog(`Delete ${entry.name}?`, text, { okLabel: "Delete", danger: true });
    if (!yes) return;
    closePreview();
    const removed = await attempt(() => files.remove(entry.path));
    const editing = editor.path();
    if (removed && editing !== null && (editing === entry.path || editing.startsWith(`${entry.path}/`))) {
      await editor.close({ force: true }); // its file is gone: nothing left to save it to
    }
  }

  async function uploadPicked() {
    const picked = [...upload.files];
    upload.value = "";
    if (picked.length === 0) return;
    const refused = files.tooBig(picked);
    if (refused) {
      showError(new Error(refused));
      return;
    }
    const what = picked.length === 1 ? picked[0].name : `${picked.length} files`;
    progressText.textContent = `Uploading ${what}…`;
    progressBar.value = 0;
    progress.hidden = false;
    await attempt(async () => {
      const saved = await files.upload(picked, (fraction) => {
        progressBar.value = fraction;
      });
      progressText.textContent = `Uploaded ${saved.join(", ")}.`;
    });
    progressBar.value = 1;
    if (!errorLine.hidden) progress.hidden = true;
  }

  async function open() {
    rootSelect.querySelector("option[value=chat]").disabled = !chats.selectedId;
    const root = files.root === "chat" && chats.selectedId ? "chat" : "work";
    dialog.showModal();
    progress.hidden = true;
    closePreview();
    editor.close({ force: true }); // unsaved changes were asked about on closing (no wait: forced)
    await attempt(() => files.show(root, chats.selectedId || ""));
  }

  files.on("changed", render);
  byTestId("files-open").addEventListener("click", open);
  byTestId("files-close").addEventListener("click", async () => {
    if (await editor.close()) dialog.close();
  });
  dialog.addEventListener("cancel", (event) => { // Escape: unsaved changes are asked about first
    if (!editor.dirty()) return;
    event.preventDefault();
    editor.close().then((closed) => closed && dialog.close());
  });
  byTestId("files-preview-close").addEventListener("click", () => {
    closePreview();
    list.focus();
  });
  rootSelect.addEventListener("change", () => {
    closePreview();
    attempt(() => files.show(rootSelect.value, chats.selectedId || ""));
  });
  gotoForm.addEventListener("submit", (event) => {
    event.preventDefault();
    go(gotoInput.value.trim());
  });
  newFolder.addEventListener("click", async () => {
    const name = await promptDialog("New folder", "", { okLabel: "Create" });
    if (name) await attempt(() => files.makeFolder(name));
  });
  newFile.addEventListener("click", async () => {
    const name = await promptDialog("New file", "", { okLabel: "Create and edit",
      text: "A name such as notes.md or script.py: the file is made empty and opened to edit." });
    if (!name) return;
    // Unsaved changes are asked about next: kept, no file is made (it could not be opened).
    if (editor.dirty() && !(await editor.close())) return;
    let made = null;
    if (await attempt(async () => { made = await files.makeFile(name); })) await editor.edit(made);
  });
  upload.addEventListener("change", uploadPicked);
  chats.on("selected", (chatId) => {
    if (!dialog.open || files.root !== "chat") return;
    if (chatId) attempt(() => files.show("chat", chatId));
    else attempt(() => files.show("work"));
  });
}
