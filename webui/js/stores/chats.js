// The chat list, the selected chat and what each chat is doing (ChatState).
// Actions talk to the server; views listen to "list", "selected" and "state".

import { Emitter } from "../emitter.js";
import * as socket from "../socket.js";
import { fetchJson, postJson } from "../http.js";

/** Newest activity first, as the server lists them. */
function activity(chat) {
  return Math.max(chat.last_message || 0, chat.created_at || 0);
}

export class ChatsStore extends Emitter {
  constructor(logStore) {
    super();
    this.logStore = logStore;
    /** id → ChatSummary */
    this.chats = new Map();
    /** [{id, reason}] chats that could not be loaded */
    this.damaged = [];
    /** id → ChatState */
    this.states = new Map();
    this.selectedId = null;
    this.loaded = false;
    /** The pending `create()`, so a message typed meanwhile goes to that chat. */
    this.creating = null;
    /** True while the open chat changes because it went away (the address is replaced). */
    this.replaceAddress = false;
    /** The project a chat made without naming one goes into (the list's project). */
    this.projectForNew = () => null;
  }

  /** Summaries, newest first. */
  list() {
    return [...this.chats.values()].sort((a, b) => activity(b) - activity(a));
  }

  get selected() {
    return this.selectedId ? this.chats.get(this.selectedId) || null : null;
  }

  /** The selected chat's state (a quiet default before the server said). */
  get selectedState() {
    return this.stateOf(this.selectedId);
  }

  stateOf(chatId) {
    return this.states.get(chatId) || {
      chat_id: chatId, running: false, paused: false, interrupted: false,
      working_agent: null, progress: "", agents: [], usage: null,
    };
  }

  // -- from the server -----------------------------------------------------------

  async load() {
    const ack = await socket.request("chats:list");
    this.chats = new Map(ack.chats.map((c) => [c.id, c]));
    this.damaged = ack.damaged || [];
    this.loaded = true;
    this.emit("list");
    if (this.selectedId && !this.chats.has(this.selectedId)) this._selectFallback();
  }

  applyDelta({ kind, chat }) {
    if (kind === "removed") {
      this.chats.delete(chat.id);
      this.states.delete(chat.id);
      this.logStore.drop(chat.id);
      if (this.selectedId === chat.id) this._selectFallback();
    } else {
      this.chats.set(chat.id, chat);
    }
    this.emit("list");
  }

  applyState(state) {
    this.states.set(state.chat_id, state);
    this.emit("state", state.chat_id);
  }

  // -- actions ---------------------------------------------------------------------

  /** Show `chatId` at once from what the page has, then fetch what changed. */
  async select(chatId) {
    this.selectedId = chatId;
    this.emit("selected", chatId);
    if (!chatId) return;
    await socket.subscribe(
      chatId,
      () => this.logStore.cursor(chatId),
      (id, ack) => this._applySubscribeAck(id, ack),
    );
  }

  /** Re-fetch the followed chat (after a reset, or a guid change seen in a `log` event). */
  refresh() {
    if (this.selectedId) return this.select(this.selectedId);
    return Promise.resolve();
  }

  /** Make a new chat (in `project`; by default the one the list shows) and select it. */
  create(project = this.projectForNew()) {
    const creating = this._create(project);
    this.creating = creating;
    const done = () => {
      if (this.creating === creating) this.creating = null;
    };
    creating.then(done, done);
    return creating;
  }

  async _create(project) {
    const ack = await socket.request("chat:new", project ? { project } : {});
    this.chats.set(ack.chat.id, ack.chat);
    this.emit("list");
    await this.select(ack.chat.id);
    return ack.chat;
  }

  /** The chat a message goes to: the selected one, the one being made, or a new one. */
  async target() {
    if (this.creating) return (await this.creating).id;
    if (this.selectedId) return this.selectedId;
    return (await this.create()).id;
  }

  async rename(chatId, name) {
    await socket.request("chat:rename", { chat_id: chatId, name });
    const chat = this.chats.get(chatId);
    if (chat) this.applyDelta({ kind: "changed", chat: { ...chat, name } });
  }

  async remove(chatId) {
    await socket.request("chat:delete", { chat_id: chatId });
    if (this.chats.has(chatId)) this.applyDelta({ kind: "removed", chat: { id: chatId } });
  }

  async reset(chatId) {
    await socket.request("chat:reset", { chat_id: chatId });
    // An emptied log sends no `log` event: ask for the new log ourselves.
    if (chatId === this.selectedId) await this.refresh();
  }

  /** Send a message; while the chat runs it is an intervention (`to`: one agent's). */
  async send(chatId, message, attachments = [], broadcast = 1, to = "") {
    this.emit("sending", { chatId }); // before: its answer may come before the ack does
    let ack;
    try {
      ack = await socket.request("chat:send", { chat_id: chatId, message, attachments, broadcast, to });
    } catch (err) {
      this.emit("send-failed", { chatId });
      throw err;
    }
    this.emit("sent", { chatId, intervention: ack.intervention });
    return ack;
  }

  /**
   * Run the last message of the chat again: `message` replaces its text (Edit), null
   * sends it as it was (Resend). The server cuts the chat back to before it first.
   */
  rerun(chatId, message = null) {
    const body = message === null ? {} : { message };
    return postJson(`/api/chats/${encodeURIComponent(chatId)}/rerun`, body);
  }

  /**
   * A new chat holding this one as it stood at log item `at` (a branch), selected once made;
   * `message`: item `at` is your message, and the branch runs this text in its place.
   */
  async branch(chatId, at, message = null) {
    const body = message === null ? { at } : { at, message };
    const answer = await postJson(`/api/chats/${encodeURIComponent(chatId)}/branch`, body);
    this.chats.set(answer.chat.id, answer.chat);
    this.emit("list");
    await this.select(answer.chat.id);
    return answer.chat;
  }

  /** The chats whose name or messages hold `query` (the server searches): id → the words
   * around it in the chat's messages ("" where its name holds it). */
  async search(query) {
    const answer = await fetchJson(`/api/chats/search?q=${encodeURIComponent(query)}`);
    return new Map(answer.ids.map((id) => [id, answer.snippets?.[id] || ""]));
  }

  /** The text of the last message you sent in `chatId` (null if none is known). */
  lastMessage(chatId) {
    if (!chatId) return null;
    const items = this.logStore.get(chatId).items;
    for (let no = items.length - 1; no >= 0; no--) {
      const item = items[no];
      if (item && item.type === "user" && item.agentno === 0) return item.content;
    }
    return null;
  }

  /** Allow or deny the tool call the log item `itemId` holds; `always`: "" (this call),
   * "chat" (the rest of the chat) or "rule" (saved as a tool rule); `reason`: a denial's. */
  approve(chatId, itemId, approved, { reason = "", always = "" } = {}) {
    return socket.request("chat:approve", {
      chat_id: chatId, item_id: itemId, approved, reason, always,
    });
  }

  /** "pause" | "resume" | "nudge" | "stop" | "continue" */
  control(chatId, action) {
    return socket.request(`chat:${action}`, { chat_id: chatId });
  }

  exportUrl(chatId) {
    return `/api/chats/${encodeURIComponent(chatId)}/export`;
  }

  /** Import an exported chat (a File) and select it. */
  async importFile(file) {
    const text = await file.text();
    const answer = await postJson("/api/chats/import", text);
    this.chats.set(answer.chat.id, answer.chat);
    this.emit("list");
    await this.select(answer.chat.id);
    return answer.chat;
  }

  /** Upload one attachment (a File) into the chat's folder; resolves with its path. */
  async uploadAttachment(chatId, file) {
    const body = new FormData();
    body.append("file", file, file.name);
    const answer = await fetchJson(`/api/chats/${encodeURIComponent(chatId)}/attachments`, {
      method: "POST",
      body,
    });
    return answer.path;
  }

  // -- internals -------------------------------------------------------------------

  _applySubscribeAck(chatId, ack) {
    // State first: the log view opens the steps still being written only while running.
    if (ack.state) this.applyState(ack.state);
    this.logStore.applySnapshot(chatId, ack);
  }

  _selectFallback() {
    const next = this.list()[0];
    this.replaceAddress = true;
    try {
      if (next) {
        this.select(next.id).catch((err) => this.emit("error", err));
      } else {
        this.selectedId = null;
        socket.forget();
        this.emit("selected", null);
      }
    } finally {
      this.replaceAddress = false;
    }
  }
}
