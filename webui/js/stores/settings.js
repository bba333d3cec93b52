// Settings and the profiles Agent 0 can run as. How each field is shown (label,
// hint, unit, heading, control) comes from the server with the values
// (GET /api/settings?form=1), where it is declared with the field. Only changed
// fields are posted; one the environment sets is never sent; a secret left as
// "***" is never changed, so the stored one stays.

import { Emitter } from "../emitter.js";
import { fetchJson, postJson } from "../http.js";

export const MASK = "***";

/** The same JSON for equal values, whatever the order of an object's keys. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value ?? "");
}

/** A field's value as its control shows it (a string; a checkbox's boolean as is). */
export function shown(spec, value) {
  switch (spec.kind) {
    case "bool":
      return Boolean(value);
    case "lines":
      return (value || []).join("\n");
    case "json":
      return Object.keys(value || {}).length ? JSON.stringify(value, null, 2) : "";
    case "json_list":
      return (value || []).length ? JSON.stringify(value, null, 2) : "";
    case "secrets":
      return Object.entries(value || {}).map(([k, v]) => `${k}=${v}`).join("\n");
    default:
      return value === null || value === undefined ? "" : String(value);
  }
}

/** What the control holds, as the server wants it: {value} or {error} in plain words. */
export function parse(spec, raw) {
  switch (spec.kind) {
    case "bool":
      return { value: Boolean(raw) };
    case "number": {
      const text = String(raw).trim();
      const value = Number(text);
      if (text === "" || Number.isNaN(value)) return { error: "Enter a number." };
      if (spec.step === "1" && !Number.isInteger(value)) return { error: "Enter a whole number." };
      if (spec.minimum !== null && value < spec.minimum) return { error: `At least ${spec.minimum}.` };
      if (spec.maximum !== null && value > spec.maximum) return { error: `At most ${spec.maximum}.` };
      return { value };
    }
    case "lines":
      return { value: String(raw).split("\n").map((s) => s.trim()).filter(Boolean) };
    case "json": {
      const text = String(raw).trim();
      if (!text) return { value: {} };
      let value;
      try {
        value = JSON.parse(text);
      } catch (err) {
        return { error: `This is not valid JSON (${err.message}).` };
      }
      if (!value || typeof value !== "object" || Array.isArray(value)) {
        return { error: 'Write a JSON object, e.g. {"temperature": 0.2}, or leave it empty.' };
      }
      return { value };
    }
    case "model_presets": {
      // The editor's value: the list as JSON (views/preset-settings.js).
      const value = JSON.parse(String(raw || "[]"));
      const problem = presetsProblem(value);
      return problem ? { error: problem } : { value };
    }
    case "json_list": {
      const text = String(raw).trim();
      if (!text) return { value: [] };
      let value;
      try {
        value = JSON.parse(text);
      } catch (err) {
        return { error: `This is not valid JSON (${err.message}).` };
      }
      if (!Array.isArray(value) || value.some((v) => !v || typeof v !== "object" || Array.isArray(v))) {
        return { error: 'Write a JSON list of objects, e.g. [{"model": "openai/gpt-4.1-mini"}] or [{"tool": "browser", "rule": "ask"}], or leave it empty.' };
      }
      return { value };
    }
    case "secrets": {
      const value = {};
      for (const line of String(raw).split("\n").map((s) => s.trim()).filter(Boolean)) {
        const cut = line.indexOf("=");
        if (cut < 1) return { error: `Write NAME=value on each line ("${line.slice(0, 30)}" is not).` };
        value[line.slice(0, cut).trim()] = line.slice(cut + 1).trim();
      }
      return { value };
    }
    default:
      return { value: String(raw) };
  }
}

/** What is wrong with the presets (a list), in words; "" when nothing is. */
function presetsProblem(presets) {
  const seen = new Set();
  for (const [place, preset] of presets.entries()) {
    const which = preset.name ? `“${preset.name}”` : `Preset ${place + 1}`;
    if (!preset.name) return `${which} needs a name.`;
    if (!preset.chat_model) return `${which} needs a chat model.`;
    if (preset.chat_ctx_length !== null && !(Number.isInteger(preset.chat_ctx_length) && preset.chat_ctx_length > 0)) {
      return `${which}: the context window is a whole number of tokens, or empty.`;
    }
    if (seen.has(preset.name.toLowerCase())) return `Two presets are called ${which}: give each its own name.`;
    seen.add(preset.name.toLowerCase());
  }
  return "";
}

export class SettingsStore extends Emitter {
  constructor() {
    super();
    /** The settings as the server last sent them (secrets masked). */
    this.values = null;
    /** [{name, title, description, group, kind, unit, options, minimum, maximum, step, secret, env}] */
    this.fields = [];
    /** The form's headings, in order. */
    this.groups = [];
    /** How commands run (sandboxed or not, and why): shown by the work folder field. */
    this.sandbox = null;
    /** [{name, title, description, available, error, ...}] */
    this.profiles = [];
    /** Who may call whom: {project, profiles: [{name, title, subordinate, calls}]}, or null. */
    this.graph = null;
    this.error = "";
    /** {field name: what is wrong with it}, shown next to the field. */
    this.fieldErrors = {};
    this.saving = false;
  }

  /** The fields under each heading: [{title, fields}]. */
  sections() {
    return this.groups.map((title) => ({ title, fields: this.fields.filter((f) => f.group === title) }));
  }

  async load() {
    this.error = "";
    this.fieldErrors = {};
    try {
      const [form, profiles, graph] = await Promise.all([
        fetchJson("/api/settings?form=1"),
        fetchJson("/api/profiles"),
        // A picture only: the form works without it (the section then says so).
        fetchJson("/api/profiles/graph").catch(() => null),
      ]);
      this.values = form.values;
      this.fields = form.fields;
      this.groups = form.groups;
      this.sandbox = form.sandbox;
      this.profiles = profiles;
      this.graph = graph;
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

  /** Say what is wrong with one field ("" when nothing is), e.g. from a check as the user types. */
  setFieldError(name, text) {
    if ((this.fieldErrors[name] || "") === (text || "")) return;
    if (text) this.fieldErrors[name] = text;
    else delete this.fieldErrors[name];
    this.emit("change");
  }

  /** The changed fields of `form` ({name: control value}), or null when one is invalid. */
  #changes(form) {
    const changes = {};
    this.fieldErrors = {};
    for (const spec of this.fields) {
      if (spec.env || !(spec.name in form)) continue; // the environment's value: not ours to change
      const parsed = parse(spec, form[spec.name]);
      if (parsed.error) this.fieldErrors[spec.name] = parsed.error;
      else if (canonical(parsed.value) !== canonical(this.values?.[spec.name])) changes[spec.name] = parsed.value;
    }
    const wrong = Object.keys(this.fieldErrors);
    if (wrong.length) {
      const titles = wrong.map((name) => {
        const spec = this.fields.find((f) => f.name === name);
        return `${spec.group} › ${spec.title}`;
      });
      this.error = `Nothing was saved: check ${titles.join(", ")}.`;
      return null;
    }
    return changes;
  }

  /** Save `form` ({name: control value}): only the changed fields are sent. Resolves true when saved. */
  async save(form) {
    this.error = "";
    const changes = this.#changes(form);
    if (changes === null || Object.keys(changes).length === 0) {
      this.emit("change");
      return changes !== null;
    }
    this.saving = true;
    this.emit("change");
    try {
      this.values = await postJson("/api/settings", changes);
      return true;
    } catch (err) {
      // The server names the field first ("llm_timeout: ..."): show it there too.
      const name = err.message.split(":")[0];
      if (this.fields.some((f) => f.name === name)) this.fieldErrors[name] = err.message.slice(name.length + 1).trim();
      this.error = err.message;
      return false;
    } finally {
      this.saving = false;
      this.emit("change");
    }
  }
}
