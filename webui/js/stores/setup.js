// Setting up a model: whether Cadre still runs on the embedded model, the local
// model's loading, the providers on offer, the models a provider lists; a test
// call, and saving (which tests first, unless the person insists).

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

/** While the local model loads, its state is asked again this often (ms). */
const POLL_MS = 2000;

export class SetupStore extends Emitter {
  constructor() {
    super();
    /** {chat_model, embed_model, embedded, local: {state, error, model}, providers: [...]} */
    this.status = null;
    /** "testing" or "saving" while the server works on it. */
    this.busy = "";
    /** {ok: true, text} or {ok: false, text, problem: {kind, headline, fix, detail}}. */
    this.result = null;
    /** The last test or save failed its test call: "Save anyway" is offered. */
    this.canForce = false;
    /** The provider's models: {state: idle|loading|done, models: [...], problem}. */
    this.models = { state: "idle", models: [], problem: null };
    this.timer = null;
    this.listing = 0;
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

  reset() {
    this.result = null;
    this.canForce = false;
    this.emit("change");
  }

  /** The answer of a test call (or of a save whose test failed) as `result`. */
  _take(answer, what) {
    if (answer.ok) {
      this.result = { ok: true, text: what(answer) };
      this.canForce = false;
    } else {
      const problem = answer.problem;
      this.result = { ok: false, text: `${problem.headline} ${problem.fix}`, problem };
      this.canForce = true;
    }
  }

  async _run(busy, work) {
    this.busy = busy;
    this.emit("change");
    try {
      return await work();
    } catch (err) {
      // The choice itself is incomplete (no key, no URL): nothing was tried.
      this.result = { ok: false, text: err.message, problem: null };
      return null;
    } finally {
      this.busy = "";
      this.emit("change");
    }
  }

  test(choice) {
    this.result = null;
    return this._run("testing", async () => {
      const answer = await postJson("/api/setup/test", choice);
      this._take(answer, (a) => `Connected: ${a.model} answered "${a.reply}".`);
    });
  }

  /** Save `choice`; the server tests it first unless `force`. True once saved. */
  async save(choice, force = false) {
    this.result = null;
    const saved = await this._run("saving", async () => {
      const answer = await postJson("/api/setup/save", { ...choice, force });
      this._take(answer, (a) => `Saved: ${a.chat_model}.`);
      return answer.ok;
    });
    if (saved) await this.load();
    return Boolean(saved);
  }

  /** Ask the provider for its models (the last request wins). */
  async listModels(choice) {
    const ticket = ++this.listing;
    this.models = { state: "loading", models: [], problem: null };
    this.emit("change");
    let models = { state: "done", models: [], problem: null };
    try {
      const answer = await postJson("/api/setup/models", choice);
      models = { state: "done", models: answer.models, problem: answer.problem };
    } catch (err) {
      models.problem = { headline: err.message, fix: "", detail: "" };
    }
    if (ticket !== this.listing) return;
    this.models = models;
    this.emit("change");
  }

  clearModels() {
    this.listing++;
    this.models = { state: "idle", models: [], problem: null };
    this.emit("change");
  }
}
