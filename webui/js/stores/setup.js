// First-run setup: whether Cadre still runs on the embedded model, the local
// model's loading, the providers on offer; a test call and saving a choice.

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

/** While the local model loads, its state is asked again this often (ms). */
const POLL_MS = 2000;

export class SetupStore extends Emitter {
  constructor() {
    super();
    /** {chat_model, embedded, local: {state, error, model}, providers: [...]} */
    this.status = null;
    this.testing = false;
    this.result = null; // {ok: bool, text}
    this.timer = null;
  }

  async load() {
    this.status = await fetchJson("/api/setup");
    this.emit("change");
    clearTimeout(this.timer);
    if (this.status.local?.state === "loading") {
      this.timer = setTimeout(() => this.load().catch(() => {}), POLL_MS);
    }
    return this.status;
  }

  async test(choice) {
    this.testing = true;
    this.result = null;
    this.emit("change");
    try {
      const answer = await postJson("/api/setup/test", choice);
      this.result = { ok: true, text: `Connected: ${answer.model} answered "${answer.reply}".` };
    } catch (err) {
      this.result = { ok: false, text: err.message };
    } finally {
      this.testing = false;
      this.emit("change");
    }
  }

  async save(choice) {
    try {
      await postJson("/api/setup/save", choice);
      await this.load();
      return true;
    } catch (err) {
      this.result = { ok: false, text: err.message };
      this.emit("change");
      return false;
    }
  }
}
