// The "Context variables" editor's data: a chat's named texts, read and saved whole.

import { Emitter } from "../emitter.js";
import { fetchJson } from "../http.js";

/** The rule of a name, as the server checks it (core/prompt/chat_variables.py). */
export const NAME_RULE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_VARIABLES = 64;
export const MAX_VALUE = 8000;

function url(chatId) {
  return `/api/chats/${encodeURIComponent(chatId)}/variables`;
}

export class VariablesStore extends Emitter {
  /** The chat's variables: {name: value}. */
  async load(chatId) {
    return (await fetchJson(url(chatId))).variables;
  }

  /** Replace the chat's variables with `variables`; resolves with what the chat holds. */
  async save(chatId, variables) {
    const body = JSON.stringify({ variables });
    const saved = await fetchJson(url(chatId), {
      method: "PUT", headers: { "Content-Type": "application/json" }, body,
    });
    this.emit("saved", chatId);
    return saved.variables;
  }
}

/**
 * The rows as the object to save, or the first problem in plain words:
 * {variables} or {problem, row, field}. A row with neither name nor value is ignored.
 */
export function collect(rows) {
  const variables = {};
  for (const [index, { name, value }] of rows.entries()) {
    const trimmed = name.trim();
    if (!trimmed && !value) continue;
    const where = { row: index };
    if (!trimmed) return { ...where, field: "name", problem: `Row ${index + 1} has a value but no name.` };
    if (!NAME_RULE.test(trimmed)) {
      return { ...where, field: "name", problem:
        `“${trimmed}” cannot be a name: use letters, digits and _, not starting with a digit, at most 64 characters.` };
    }
    if (trimmed in variables) return { ...where, field: "name", problem: `“${trimmed}” is there twice: keep one.` };
    if (value.length > MAX_VALUE) {
      return { ...where, field: "value", problem: `The value of “${trimmed}” is longer than ${MAX_VALUE} characters.` };
    }
    variables[trimmed] = value;
  }
  if (Object.keys(variables).length > MAX_VARIABLES) {
    return { row: rows.length - 1, field: "name", problem: `A chat holds at most ${MAX_VARIABLES} variables.` };
  }
  return { variables };
}
