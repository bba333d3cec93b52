// The "Context" view's data: the exact prompt of an agent's last model call.

import { Emitter } from "../emitter.js";
import { fetchJson } from "../http.js";

export class ContextStore extends Emitter {
  constructor() {
    super();
    this.chatId = null;
    /** The agent shown: its number, or its name ("A1.2"). */
    this.agent = 0;
    /** {agent, messages: [{role, content}], tokens} or null */
    this.data = null;
    this.error = "";
    this.loading = false;
  }

  async load(chatId, agent) {
    Object.assign(this, { chatId, agent, error: "", loading: true });
    this.emit("change");
    try {
      const url = `/api/chats/${encodeURIComponent(chatId)}/context?agent=${encodeURIComponent(agent)}`;
      this.data = await fetchJson(url);
    } catch (err) {
      this.data = null;
      this.error = err.message;
    } finally {
      this.loading = false;
      this.emit("change");
    }
  }
}
