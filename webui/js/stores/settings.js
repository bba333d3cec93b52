// Settings and the profiles Agent 0 can run as. The form's fields are
// described here (FIELDS); the view renders them. Only changed fields are
// posted, and a secret left as "***" is never sent, so the stored one stays.

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

export const MASK = "***";

/** Sections of the settings form. kind: text | password | apikey | number | bool | profile. */
export const SECTIONS = [
  {
    title: "Chat model",
    fields: [
      { name: "chat_model", label: "Model", kind: "text", hint: "litellm model string, e.g. openai/gpt-4.1-mini" },
      { name: "chat_api_base", label: "API base", kind: "text", hint: "empty: the provider's default" },
      { name: "chat_api_key", label: "API key", kind: "password" },
      { name: "chat_ctx_length", label: "Context length", kind: "number", hint: "tokens" },
    ],
  },
  {
    title: "Utility model",
    fields: [
      { name: "util_model", label: "Model", kind: "text" },
      { name: "util_api_base", label: "API base", kind: "text" },
      { name: "util_api_key", label: "API key", kind: "password" },
      { name: "util_ctx_length", label: "Context length", kind: "number" },
    ],
  },
  {
    title: "Embedding model",
    fields: [
      { name: "embed_model", label: "Model", kind: "text" },
      { name: "embed_api_base", label: "API base", kind: "text" },
      { name: "embed_api_key", label: "API key", kind: "password" },
      { name: "embed_ctx_length", label: "Context length", kind: "number" },
    ],
  },
  {
    title: "Agent 0",
    fields: [{ name: "agent_profile", label: "Profile", kind: "profile" }],
  },
  {
    title: "Local model",
    fields: [
      { name: "local_model_path", label: "GGUF file", kind: "text", hint: "for local/<name> models; empty: the built-in Gemma 3 270M" },
      { name: "local_ctx_length", label: "Context length", kind: "number", hint: "tokens" },
      { name: "local_threads", label: "CPU threads", kind: "number", hint: "0: all cores" },
      { name: "structured_output", label: "Structured output", kind: "text", hint: "auto, on or off: hold remote models to the reply schema" },
    ],
  },
  {
    title: "Budget and context",
    fields: [
      { name: "budget_tokens", label: "Tokens per chat", kind: "number", hint: "0: no limit" },
      { name: "budget_cost", label: "Cost per chat (USD)", kind: "number", hint: "0: no limit" },
      { name: "budget_calls", label: "Model calls per chat", kind: "number", hint: "0: no limit" },
      { name: "budget_seconds", label: "Seconds per run", kind: "number", hint: "0: no limit" },
      { name: "history_ratio", label: "History share of the window", kind: "number", hint: "0.7: the rest is for the system prompt and the reply" },
    ],
  },
  {
    title: "Code execution",
    fields: [
      { name: "code_exec_confirm", label: "Ask me before each command runs", kind: "bool" },
      { name: "work_dir", label: "Work folder", kind: "text", hint: "empty: usr/workdir" },
      { name: "code_exec_first_output_timeout", label: "Wait for first output", kind: "number", hint: "seconds" },
      { name: "code_exec_between_output_timeout", label: "Wait between outputs", kind: "number", hint: "seconds" },
      { name: "code_exec_max_timeout", label: "Longest wait per call", kind: "number", hint: "seconds; the command keeps running" },
      { name: "code_exec_node", label: "Node.js program", kind: "text" },
    ],
  },
  {
    title: "Access",
    fields: [
      { name: "auth_login", label: "Login", kind: "text", hint: "needed to serve on an address other than 127.0.0.1; empty: no login asked" },
      { name: "auth_password", label: "Password", kind: "password" },
      { name: "api_key", label: "External API key", kind: "apikey", hint: "X-API-Key of /api/v1; empty disables it" },
    ],
  },
];

const KNOWN = new Set(SECTIONS.flatMap((s) => s.fields.map((f) => f.name)));

export class SettingsStore extends Emitter {
  constructor() {
    super();
    /** The settings as the server last sent them (secrets masked). */
    this.values = null;
    /** [{name, title, description, available, error, ...}] */
    this.profiles = [];
    this.error = "";
    this.saving = false;
  }

  /** Fields the server has that the form does not describe (shown as "More"). */
  extraFields() {
    if (!this.values) return [];
    return Object.entries(this.values)
      .filter(([name, value]) => !KNOWN.has(name) && ["string", "number", "boolean"].includes(typeof value))
      .map(([name, value]) => ({
        name,
        label: name.replaceAll("_", " "),
        kind: { number: "number", boolean: "bool" }[typeof value] || "text",
      }));
  }

  async load() {
    this.error = "";
    try {
      const [values, profiles] = await Promise.all([
        fetchJson("/api/settings"),
        fetchJson("/api/profiles"),
      ]);
      this.values = values;
      this.profiles = profiles;
    } catch (err) {
      this.error = err.message;
    }
    this.emit("change");
  }

  /** The external API key in clear (the form shows it masked). Resolves the key or null. */
  async revealApiKey() {
    return this.#keyAction("/api/settings/api_key/reveal");
  }

  /** Replace the external API key; the old one stops working at once. */
  async regenerateApiKey() {
    const key = await this.#keyAction("/api/settings/api_key/regenerate");
    // Stored already: the form must not count it as a change.
    if (key !== null && this.values) this.values.api_key = key;
    return key;
  }

  async #keyAction(url) {
    this.error = "";
    try {
      return (await postJson(url, {})).api_key;
    } catch (err) {
      this.error = err.message;
      return null;
    } finally {
      this.emit("change");
    }
  }

  /**
   * Save `form` ({name: string value}): only fields that differ from what was
   * loaded are sent; numbers are sent as numbers. Resolves true when saved.
   */
  async save(form) {
    const changes = {};
    for (const [name, raw] of Object.entries(form)) {
      const old = this.values?.[name];
      const value = typeof old === "number" ? Number(raw) : typeof old === "boolean" ? Boolean(raw) : raw;
      if (typeof old === "number" && (raw === "" || Number.isNaN(value))) {
        this.error = `${name}: enter a number`;
        this.emit("change");
        return false;
      }
      if (value !== (old ?? "")) changes[name] = value;
    }
    if (Object.keys(changes).length === 0) {
      this.error = "";
      this.emit("change");
      return true;
    }
    this.saving = true;
    this.error = "";
    this.emit("change");
    try {
      this.values = await postJson("/api/settings", changes);
      return true;
    } catch (err) {
      this.error = err.message;
      return false;
    } finally {
      this.saving = false;
      this.emit("change");
    }
  }
}
