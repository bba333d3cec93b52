// The search box above the chat list. A chat matches when its name holds the
// text (at once, in the page) or what was said in it does (asked of the server
// a moment after typing stops; it sends the words around the text, shown under the
// chat's name). Escape clears the box.

/** Milliseconds of quiet typing before the server is asked. */
const PAUSE_MS = 250;

export class ChatSearch {
  /** `input`: the search box; `changed()`: called whenever what matches changes. */
  constructor(input, { chats, notices }, changed) {
    this.input = input;
    this.chats = chats;
    this.notices = notices;
    this.changed = changed;
    this.query = "";
    /** What the server found for `query`: id → snippet (empty until it answered). */
    this.found = new Map();
    this.asked = 0;
    this.timer = null;
    input.addEventListener("input", () => this.set(input.value));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && input.value) {
        event.preventDefault();
        input.value = "";
        this.set("");
      }
    });
  }

  get active() {
    return this.query !== "";
  }

  /** Does `chat` (a ChatSummary) match the search? Every chat does when there is none. */
  matches(chat) {
    if (!this.active) return true;
    const name = (chat.name || "New chat").toLocaleLowerCase();
    return name.includes(this.query.toLocaleLowerCase()) || this.found.has(chat.id);
  }

  /** The words around the text in `chatId`'s messages, "" when none are to be shown. */
  snippet(chatId) {
    return this.active ? this.found.get(chatId) || "" : "";
  }

  set(text) {
    const query = text.trim();
    if (query === this.query) return;
    this.query = query;
    this.found = new Map();
    clearTimeout(this.timer);
    const asked = ++this.asked;
    if (query) this.timer = setTimeout(() => this.ask(query, asked), PAUSE_MS);
    this.changed();
  }

  async ask(query, asked) {
    try {
      const found = await this.chats.search(query);
      if (asked !== this.asked) return; // typed on meanwhile: a newer search is coming
      this.found = found;
      this.changed();
    } catch (err) {
      this.notices.error(err, "Search");
    }
  }
}
