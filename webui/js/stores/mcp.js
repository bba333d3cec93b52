// The MCP servers as the settings page shows them: each server's state and tools
// (GET /api/mcp/servers, polled while the page is open), a restart, and the check
// of the `mcp_servers` JSON as the user types it (POST /api/mcp/validate, the same
// check the setting gets on save). No DOM here; the view listens for "change".

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

/** How often the status is asked for while the page is open. */
const POLL_MS = 2000;
/** How long typing must pause before the text is checked. */
const VALIDATE_MS = 400;

export class McpStore extends Emitter {
  constructor() {
    super();
    /** [{name, transport, state, error, stderr_tail, restarts, tools: [{name, description}]}] or null before the first answer. */
    this.servers = null;
    /** Why the status could not be read ("" when it could). */
    this.error = "";
    /** The last check of the typed text: {text, ok, error, servers} or null. */
    this.check = null;
    /** Names of servers whose restart is on its way (the request not answered yet). */
    this.restarting = new Set();
    this.timer = null;
    /** Counts start() and stop(): a poll of an older round stops. */
    this.round = 0;
    this.validateTimer = null;
    this.validateSeq = 0;
  }

  /** Ask for the status now and every POLL_MS until stop(). */
  start() {
    this.stop();
    // A refresh still on its way when the page closed and opened again belongs to an
    // older round: it must not schedule a second loop beside this one.
    const round = this.round;
    const tick = async () => {
      await this.refresh();
      if (round === this.round) this.timer = setTimeout(tick, POLL_MS);
    };
    tick();
  }

  stop() {
    this.round += 1;
    clearTimeout(this.timer);
    this.timer = null;
    clearTimeout(this.validateTimer);
  }

  async refresh() {
    try {
      const answer = await fetchJson("/api/mcp/servers");
      this.servers = answer.servers || [];
      this.error = "";
    } catch (err) {
      this.error = `Cannot read the MCP servers' status (${err.message}).`;
    }
    this.emit("change");
  }

  /** Restart one server; its new state shows with the next status. */
  async restart(name) {
    this.restarting.add(name);
    this.emit("change");
    let failed = "";
    try {
      await postJson(`/api/mcp/servers/${encodeURIComponent(name)}/restart`, {});
    } catch (err) {
      failed = `Cannot restart ${name} (${err.message}).`;
    }
    this.restarting.delete(name);
    await this.refresh();
    // Said after the refresh, which clears an earlier error of reading the status.
    if (failed) {
      this.error = failed;
      this.emit("change");
    }
  }

  /** Check `text` once typing pauses; an empty text means no servers and needs no check. */
  validateSoon(text) {
    clearTimeout(this.validateTimer);
    if (!text.trim()) {
      this.validateSeq += 1; // an answer still on its way is for older text
      this.setCheck({ text, ok: true, error: null, servers: [] });
      return;
    }
    this.validateTimer = setTimeout(() => this.validate(text), VALIDATE_MS);
  }

  async validate(text) {
    const seq = ++this.validateSeq;
    let check;
    try {
      const answer = await postJson("/api/mcp/validate", { text });
      check = { text, ok: Boolean(answer.ok), error: answer.error || null, servers: answer.servers || [] };
    } catch (err) {
      // The check could not run: say so, but do not call the text wrong.
      check = { text, ok: true, error: null, servers: [], unchecked: err.message };
    }
    if (seq === this.validateSeq) this.setCheck(check);
  }

  setCheck(check) {
    this.check = check;
    this.emit("validated", check);
    this.emit("change");
  }
}
