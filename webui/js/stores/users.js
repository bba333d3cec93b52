// The accounts, as an admin manages them (server/routes/users.py): the list, adding
// someone (with a password, or an invite link they open to choose theirs), disabling,
// roles, a new password, deleting (their chats and files deleted or handed over).

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";
import { sendJson } from "./me.js";

function url(name) {
  return `/api/users/${encodeURIComponent(name)}`;
}

export class UsersStore extends Emitter {
  constructor() {
    super();
    /** [{name, role, disabled, created, invited, first_admin, ...}] */
    this.users = [];
    this.loaded = false;
  }

  get(name) {
    return this.users.find((u) => u.name === name) || null;
  }

  async load() {
    const found = await fetchJson("/api/users");
    this.users = found.users.sort((a, b) => a.name.localeCompare(b.name));
    this.loaded = true;
    this.emit("list");
  }

  /**
   * Add `name` as `role`, with `password`, or with `invite` a link: the answer
   * {user, invite?: {link, expires}}.
   */
  async add({ name, role, password = "", invite = false }) {
    const made = await postJson("/api/users", invite ? { name, role, invite: true } : { name, role, password });
    await this.load();
    return made;
  }

  /** {disabled} / {role} / {password}. */
  async change(name, fields) {
    const changed = await sendJson("PATCH", url(name), fields);
    await this.load();
    return changed.user;
  }

  /** `to` null: their chats and files are deleted; else handed over to that user. */
  async remove(name, to = null) {
    const body = to ? { data: "hand_over", to } : { data: "delete" };
    const done = await sendJson("DELETE", url(name), body);
    await this.load();
    return done;
  }
}
