// The chats' logs as the page knows them: per chat, items upserted by `no`,
// keeping the highest `version` seen; everything starts over when the log's
// guid changes (the chat was reset). No DOM code: views listen to "change".

import { Emitter } from "../emitter.js";

class ChatLog {
  constructor(guid = "") {
    this.guid = guid;
    /** Highest version this page has (the `since` of the next subscribe). */
    this.version = 0;
    /** Items by `no` (their position in the log). */
    this.items = [];
    /** The last `progress` item, shown as a status line rather than in the log. */
    this.progress = null;
  }
}

export class LogStore extends Emitter {
  constructor() {
    super();
    /** chat id → ChatLog */
    this.logs = new Map();
  }

  /** The log of `chatId` (an empty one if the page has none yet). */
  get(chatId) {
    let log = this.logs.get(chatId);
    if (!log) {
      log = new ChatLog();
      this.logs.set(chatId, log);
    }
    return log;
  }

  /** What to subscribe with: only the changes after what the page has. */
  cursor(chatId) {
    const log = this.logs.get(chatId);
    return log ? { since: log.version, guid: log.guid } : { since: 0, guid: "" };
  }

  /** Apply a `chat:subscribe` ack ({guid, version, items, reset}). */
  applySnapshot(chatId, ack) {
    const log = this.get(chatId);
    // Only a guid the page does not have means "start over": a `log` event may have
    // arrived (and set the guid) before this ack, and its items must be kept.
    const reset = ack.guid !== log.guid;
    if (reset) this._restart(log, ack.guid);
    const changed = this._upsert(log, ack.items || []);
    // The ack's version is the log's version when the snapshot was taken.
    log.version = Math.max(log.version, ack.version || 0);
    this.emit("change", { chatId, nos: changed, reset });
  }

  /**
   * Apply a `log` event ({chat_id, guid, version, items}). Returns true when
   * the guid changed under the page (the chat was reset): the caller should
   * subscribe again to be sure nothing of the new log is missing.
   */
  applyEvent(event) {
    const log = this.get(event.chat_id);
    const reset = Boolean(log.guid) && event.guid !== log.guid;
    if (reset || !log.guid) this._restart(log, event.guid, !reset);
    const changed = this._upsert(log, event.items || []);
    this.emit("change", { chatId: event.chat_id, nos: changed, reset });
    return reset;
  }

  /** Forget a chat's log (the chat was deleted). */
  drop(chatId) {
    this.logs.delete(chatId);
  }

  _restart(log, guid, keepItems = false) {
    log.guid = guid;
    if (keepItems) return;
    log.items = [];
    log.version = 0;
    log.progress = null;
  }

  /** Upsert items by `no`; returns the `no`s that really changed. */
  _upsert(log, items) {
    const changed = [];
    for (const item of items) {
      const known = log.items[item.no];
      if (known && known.version >= item.version) continue;
      log.items[item.no] = item;
      changed.push(item.no);
      // Only item versions raise `version` from events: an event's own version
      // may already count a change that the next event carries.
      if (item.version > log.version) log.version = item.version;
      if (item.type === "progress" && (!log.progress || log.progress.no <= item.no)) {
        log.progress = item;
      }
    }
    return changed;
  }
}
