// The file panel's data: which folder is shown (the work folder or the open chat's),
// its entries, and the actions on them. No DOM here; the view listens to "changed".

import { Emitter } from "../emitter.js";
import { csrfToken, fetchJson, HttpError, postJson } from "../http.js";

/** The stable address of a file's bytes (images in the page use it as their src). */
export function rawUrl({ root, chat, path }) {
  const params = new URLSearchParams({ root, path });
  // The open chat names the work folder too (a chat in a project works in the project's).
  if (chat) params.set("chat", chat);
  return `/api/files/raw?${params}`;
}

/** The address that downloads a file. */
export function downloadUrl(where) {
  return rawUrl(where).replace("/api/files/raw?", "/api/files/download?");
}

/** "12.3 kB" for a size in bytes. */
export function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export class FilesStore extends Emitter {
  constructor() {
    super();
    this.root = "work";
    this.chat = "";
    this.path = "";
    this.label = "";
    this.writable = true;
    this.entries = [];
    this.truncated = false;
    this.uploadLimit = 0;
    this.editLimit = 0; // the largest file the editor opens (bigger ones are downloaded)
    this.sandbox = null; // how commands run (shown by the work folder)
    this.asked = 0; // the latest listing asked for: an older answer arriving late is dropped
  }

  /** Where a request goes: the place and `path` inside it. */
  where(path = this.path) {
    return { root: this.root, chat: this.chat, path };
  }

  query(path = this.path) {
    const params = new URLSearchParams({ root: this.root, path });
    if (this.chat) params.set("chat", this.chat);
    return params.toString();
  }

  /** Show folder `path` of the current place; a refused path rejects and changes nothing. */
  async open(path = this.path) {
    const mine = ++this.asked;
    const data = await fetchJson(`/api/files/list?${this.query(path)}`);
    if (mine !== this.asked) return;
    Object.assign(this, {
      path: data.path, label: data.label, writable: data.writable, entries: data.entries,
      truncated: data.truncated, uploadLimit: data.upload_limit, editLimit: data.edit_limit,
      sandbox: data.sandbox,
    });
    this.emit("changed");
  }

  /** Switch between the work folder ("work") and the chat's folder ("chat", `chatId`). */
  async show(root, chatId = "") {
    const before = { root: this.root, chat: this.chat };
    Object.assign(this, { root, chat: chatId });
    try {
      await this.open("");
    } catch (err) {
      Object.assign(this, before); // still showing the folder it showed
      this.emit("changed");
      throw err;
    }
  }

  preview(path) {
    return fetchJson(`/api/files/preview?${this.query(path)}`);
  }

  /** A text file to edit, `{text, version, size}`: the editor keeps its place (`where`). */
  loadText(where) {
    const params = new URLSearchParams({ root: where.root, path: where.path });
    if (where.chat) params.set("chat", where.chat);
    return fetchJson(`/api/files/text?${params}`);
  }

  /** Save an edited file unless it changed since `version` (a 409 then), or whatever it is
   * now with `force`. Resolves with the new `{version, size}`. */
  saveText(where, text, version, force = false) {
    return postJson("/api/files/save", { ...where, text, version, force });
  }

  async rename(path, name) {
    await postJson("/api/files/rename", { ...this.where(path), name });
    await this.open();
  }

  async makeFolder(name) {
    await postJson("/api/files/folder", { ...this.where(), name });
    await this.open();
  }

  /** A new empty file `name` in this folder, for the editor: its row of the list. */
  async makeFile(name) {
    const made = await postJson("/api/files/new", { ...this.where(), name });
    await this.open();
    return this.entries.find((entry) => entry.path === made.path)
      || { path: made.path, name: made.path.split("/").pop(), kind: "file", size: 0 };
  }

  async remove(path) {
    await postJson("/api/files/delete", this.where(path));
    await this.open();
  }

  /** Refuse before sending what the server would refuse: more than the upload limit. */
  tooBig(files) {
    const total = files.reduce((sum, file) => sum + file.size, 0);
    if (!this.uploadLimit || total <= this.uploadLimit) return null;
    return `The upload is ${sizeText(total)}, more than the limit of ${sizeText(this.uploadLimit)}; `
      + "nothing was sent (the limit is the setting 'Largest upload').";
  }

  /**
   * Upload `files` into the folder shown, in one request. `onProgress(fraction)` follows
   * the bytes sent (fetch cannot report that, XMLHttpRequest can). Resolves with the
   * saved paths.
   */
  async upload(files, onProgress) {
    const form = new FormData();
    for (const file of files) form.append("files", file, file.name);
    let saved;
    try {
      saved = await this.send(form, await csrfToken(), onProgress);
    } catch (err) {
      // A login in another tab renewed the session's token: ask for it again, once.
      if (err.status !== 403 || !err.message.includes("CSRF")) throw err;
      saved = await this.send(form, await csrfToken(true), onProgress);
    }
    await this.open();
    return saved;
  }

  /** POST `form` to the upload route; resolves with the saved paths. */
  send(form, token, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `/api/files/upload?${this.query()}`);
      xhr.setRequestHeader("X-CSRF-Token", token);
      xhr.responseType = "json";
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) onProgress(event.loaded / event.total);
      });
      xhr.addEventListener("load", () => {
        if (xhr.status === 200) resolve(xhr.response.saved);
        else reject(new HttpError(xhr.status, xhr.response?.error || `${xhr.status} ${xhr.statusText}`));
      });
      xhr.addEventListener("error", () => reject(new HttpError(0, "cannot reach the server")));
      xhr.send(form);
    });
  }
}
