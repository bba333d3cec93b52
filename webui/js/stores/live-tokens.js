// Token estimates of model calls still streaming. An agent's usage counts a call
// only once it ends, so while a reply streams the page estimates what has been
// written so far (characters / 4) from the log items it already receives (a step's
// row carries the count of characters written, `written`): no extra messages. The estimate holds until the chat state shows
// the agent's call count go up: then the real usage has replaced it.

import { agentKey } from "../nesting.js";

/** Characters per token of the estimate (a common rule of thumb for English). */
export const CHARS_PER_TOKEN = 4;

/** Kinds that a step's own call writes, or that run beside it: not a later step. */
const BESIDE = new Set(["response", "util", "progress", "user"]);

export class LiveTokens {
  constructor(logStore, chats) {
    this.logStore = logStore;
    this.chats = chats;
    /** "chat:no" of a streaming step → its agent's call count when it was first seen */
    this.marks = new Map();
  }

  /** agent name → estimated tokens its streaming call has written (selected chat). */
  estimates(chatId = this.chats.selectedId) {
    const out = new Map();
    if (!chatId) return out;
    const state = this.chats.stateOf(chatId);
    if (!state.running) {
      this.forget(chatId);
      return out;
    }
    const items = this.logStore.get(chatId).items;
    for (const agent of state.agents || []) {
      if (agent.status !== "working") continue;
      const step = latestStep(items, agent.name || `A${agent.number}`);
      if (!step) continue;
      const key = `${chatId}:${step.no}`;
      const calls = agent.usage?.calls || 0;
      if (!this.marks.has(key)) this.marks.set(key, calls);
      if (calls > this.marks.get(key)) continue; // counted: the real usage is in
      const tokens = Math.ceil(writtenChars(items, step) / CHARS_PER_TOKEN);
      if (tokens > 0) out.set(agent.name || `A${agent.number}`, tokens);
    }
    return out;
  }

  forget(chatId) {
    for (const key of this.marks.keys()) if (key.startsWith(`${chatId}:`)) this.marks.delete(key);
  }
}

/** The agent's newest step (`agent` item), if nothing of its own came after it. */
function latestStep(items, name) {
  for (let no = items.length - 1; no >= 0; no--) {
    const item = items[no];
    if (!item || agentKey(item) !== name || BESIDE.has(item.type)) continue;
    return item.type === "agent" ? item : null;
  }
  return null;
}

/** Characters the step's call has written: the server's count (`written`, every half
 * second: a tool's arguments are not shown while written), or what the log shows of it
 * when that is more (it moves between two counts). */
function writtenChars(items, step) {
  const k = step.kvps || {};
  const thoughts = Array.isArray(k.thoughts) ? k.thoughts.join(" ") : String(k.thoughts || "");
  let chars = thoughts.length + String(k.reasoning || "").length + String(k.tool_name || "").length;
  for (let no = step.no + 1; no < items.length; no++) {
    const item = items[no];
    if (item?.type === "response" && agentKey(item) === agentKey(step)) {
      chars += (item.content || "").length;
      break;
    }
  }
  return Math.max(chars, Number(k.written) || 0);
}
