// The notification history (server/protocol.md "notifications"): the entries, newest
// first, and the unread count, kept in step with the server's `notifications:delta`.
// Events: "changed" (anything), "added" (a new entry, for the toast).

import { Emitter } from "../emitter.js";
import * as socket from "../socket.js";

export class NotificationsStore extends Emitter {
  constructor() {
    super();
    /** Entries, newest first: {id, time, kind, type, title, message, chat_id, task, read}. */
    this.items = [];
    this.unread = 0;
  }

  /** Fetch the whole history (at start and after a reconnect: deltas are not replayed). */
  async load() {
    const ack = await socket.request("notifications:list");
    this.items = ack.items;
    this.unread = ack.unread;
    this.emit("changed");
  }

  /** Apply a `notifications:delta` event. */
  applyDelta(delta) {
    if (delta.kind === "added") {
      if (!this.items.some((n) => n.id === delta.item.id)) this.items.unshift(delta.item);
    } else if (delta.kind === "read") {
      const ids = new Set(delta.ids);
      for (const item of this.items) if (ids.has(item.id)) item.read = true;
    } else if (delta.kind === "cleared") {
      this.items = [];
    }
    this.unread = delta.unread;
    this.emit("changed");
    if (delta.kind === "added") this.emit("added", delta.item);
  }

  /** Mark entries read (`ids`), or every one (no argument). */
  markRead(ids = null) {
    return socket.request("notifications:read", ids ? { ids } : {});
  }

  clear() {
    return socket.request("notifications:clear");
  }
}
