// Projects: the list (with each one's number of chats), create / change / delete, and
// which project the chat list shows ("" all chats, NONE chats of no project). A new
// chat made from the sidebar goes into the project shown.

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

/** The chat list's choice "chats of no project". */
export const NONE = "-";

function url(name) {
  return `/api/projects/${encodeURIComponent(name)}`;
}

function sendJson(method, target, body) {
  return fetchJson(target, {
    method,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

export class ProjectsStore extends Emitter {
  constructor() {
    super();
    /** [Project], by name (server/routes/projects.py). */
    this.projects = [];
    this.loaded = false;
    /** The chat list's filter: "" every chat, NONE no project, else a project's name. */
    this.shown = "";
  }

  names() {
    return this.projects.map((p) => p.name);
  }

  get(name) {
    return this.projects.find((p) => p.name === name) || null;
  }

  /** The project a new chat from the sidebar goes into (null: none). */
  get forNewChat() {
    return this.shown && this.shown !== NONE ? this.shown : null;
  }

  async load() {
    const data = await fetchJson("/api/projects");
    this.projects = data.projects;
    this.loaded = true;
    if (this.shown && this.shown !== NONE && !this.get(this.shown)) this.shown = "";
    this.emit("list");
  }

  show(choice) {
    this.shown = choice;
    this.emit("shown", choice);
  }

  /** Whether a chat (a ChatSummary) is in the list as it is filtered. */
  showsChat(chat) {
    if (!this.shown) return true;
    if (this.shown === NONE) return !chat.project;
    return chat.project === this.shown;
  }

  async create(fields) {
    const made = await postJson("/api/projects", fields);
    await this.load();
    return made;
  }

  async update(name, fields) {
    const changed = await sendJson("PATCH", url(name), fields);
    await this.load();
    return changed;
  }

  async remove(name) {
    await fetchJson(url(name), { method: "DELETE" });
    if (this.shown === name) this.show("");
    await this.load();
  }

  /**
   * The profiles of `name`'s chats (its own ones too), for the form: `available` ones, and
   * those it turns off (`off`), which are listed as not available there.
   */
  async profiles(name, off = []) {
    const query = name ? `?project=${encodeURIComponent(name)}` : "";
    const found = await fetchJson(`/api/profiles${query}`);
    return found
      .filter((p) => p.available || off.includes(p.name))
      .map((p) => ({ name: p.name, title: p.title, available: p.available }));
  }
}
