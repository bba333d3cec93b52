// The address of the open chat: `#/chat/<id>`. A fragment, so the page and its
// assets (loaded by relative paths) stay where they are and the server's route
// guards need nothing new. Opening a chat adds an entry to the browser's history
// (Back/Forward move between the chats you opened); a reload opens the chat the
// address names; an address naming no chat says so and opens the newest chat.

const PREFIX = "#/chat/";

/** The chat id an address fragment names, or null. */
export function chatIdOf(hash) {
  if (!hash.startsWith(PREFIX)) return null;
  try {
    return decodeURIComponent(hash.slice(PREFIX.length)) || null;
  } catch {
    return null; // a broken %-escape names no chat
  }
}

/** The fragment of a chat ("" for none). */
export function hashOf(chatId) {
  return chatId ? PREFIX + encodeURIComponent(chatId) : "";
}

export class Router {
  constructor({ chats, notices }) {
    this.chats = chats;
    this.notices = notices;
    /** True while a selection follows the address (it must not add a history entry). */
    this.following = false;
  }

  /**
   * Keep the address and the open chat in step, and open the chat the address names.
   * Once done, `<html data-routed>` is set (tests wait for it before acting).
   */
  async start() {
    this.chats.on("selected", (chatId) => this.write(chatId));
    window.addEventListener("hashchange", () => {
      this.follow().catch((err) => this.notices.error(err));
    });
    if (this.chats.selectedId) {
      // A chat was opened before the list came (a message typed at once): keep it.
      this.following = true;
      this.write(this.chats.selectedId);
      this.following = false;
    } else {
      await this.follow();
    }
    document.documentElement.dataset.routed = "";
  }

  /** The open chat changed: record it in the address. */
  write(chatId) {
    const hash = hashOf(chatId);
    if (window.location.hash === hash) return;
    const url = hash || window.location.pathname + window.location.search;
    // Following the address, or falling back after a delete: replace, so Back does not
    // lead to the same place again (or to a chat that is gone).
    if (this.following || this.chats.replaceAddress) history.replaceState(null, "", url);
    else history.pushState(null, "", url);
  }

  /** Open the chat the address names; one that does not exist falls back to the newest. */
  async follow() {
    const wanted = chatIdOf(window.location.hash);
    if (wanted && wanted === this.chats.selectedId) return;
    if (wanted && this.chats.chats.has(wanted)) {
      await this.open(wanted);
      return;
    }
    if (wanted || window.location.hash) {
      this.notices.push({
        title: "Chat not found",
        message: "The address names a chat that does not exist (it may have been deleted). Showing your newest chat instead.",
        type: "warning",
      });
    }
    const newest = this.chats.list()[0];
    if (newest) await this.open(newest.id);
    else if (window.location.hash) history.replaceState(null, "", window.location.pathname + window.location.search);
  }

  async open(chatId) {
    this.following = true;
    try {
      // `select` tells its listeners at once, before its first await: the address is
      // written while `following` holds.
      const selecting = this.chats.select(chatId);
      this.following = false;
      await selecting;
    } finally {
      this.following = false;
    }
  }
}
