// Who uses the page (GET /api/me): their name and role once accounts exist, or the
// desktop mode (no accounts: the one person may do everything, as before accounts).
// Their own account's actions: a new password, their API keys, their own settings
// (My settings: GET/PATCH /api/my/settings), logging out.

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

export function sendJson(method, url, body) {
  return fetchJson(url, {
    method,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

export class MeStore extends Emitter {
  constructor() {
    super();
    this.loaded = false;
    /** False in the desktop mode: nobody logs in and nothing is hidden. */
    this.accounts = false;
    this.name = "";
    this.role = "";
    this.isAdmin = true;
    /** The settings' login: its password changes in Settings only. */
    this.firstAdmin = false;
    /** "password", or a provider that vouches for them (then Cadre keeps no password). */
    this.source = "password";
    /** Settles once the first answer came (or failed): views that wait for the role. */
    this.ready = new Promise((resolve) => {
      this._settle = resolve;
    });
  }

  /** A member: their own things only (the admin's entries are hidden). */
  get isMember() {
    return this.accounts && !this.isAdmin;
  }

  async load() {
    try {
      const me = await fetchJson("/api/me");
      this.accounts = Boolean(me.accounts);
      this.name = me.name || "";
      this.role = me.role || "";
      this.isAdmin = this.accounts ? Boolean(me.is_admin) : true;
      this.firstAdmin = Boolean(me.first_admin);
      this.source = me.source || "password";
      this.loaded = true;
      this.emit("change");
    } finally {
      this._settle();
    }
  }

  #url(tail = "") {
    return `/api/users/${encodeURIComponent(this.name)}${tail}`;
  }

  changePassword(current, password) {
    return sendJson("PATCH", this.#url(), { password, current_password: current });
  }

  /** [{id, label, created}], newest first. */
  async keys() {
    const found = await fetchJson(this.#url("/keys"));
    return found.keys.sort((a, b) => b.created - a.created);
  }

  /** A new key: {id, label, created, key}; `key` is never shown again. */
  makeKey(label) {
    return postJson(this.#url("/keys"), { label });
  }

  revokeKey(id) {
    return fetchJson(`/api/keys/${encodeURIComponent(id)}`, { method: "DELETE" });
  }

  /** Their own settings as the server shows them (keys and secrets as "***"); rejects with
   * an HttpError of status 409 for the one whose settings are the server's. */
  mySettings() {
    return fetchJson("/api/my/settings");
  }

  /** Change some of their own settings; resolves with the same view as mySettings(). */
  changeMySettings(changes) {
    return sendJson("PATCH", "/api/my/settings", changes);
  }

  logout() {
    return postJson("/logout", {});
  }
}
