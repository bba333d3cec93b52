// The delegation tree of the selected chat (from ChatState.agents) and the
// agent the log is filtered to. Agents form a chain: each works for the one
// numbered before it (A0 → A1 → A2), so the tree nests by number.

import { Emitter } from "../emitter.js";

export class TreeStore extends Emitter {
  constructor(chatsStore) {
    super();
    this.chats = chatsStore;
    /** Agent number the log shows alone, or null for everything. */
    this.filter = null;
    chatsStore.on("selected", () => this.setFilter(null));
    chatsStore.on("state", (chatId) => {
      if (chatId === chatsStore.selectedId) this.emit("change");
    });
  }

  /** The selected chat's agents, nested: [{agent, children: [...]}]. */
  tree() {
    const agents = [...(this.chats.selectedState.agents || [])].sort((a, b) => a.number - b.number);
    const roots = [];
    const byNumber = new Map();
    for (const agent of agents) {
      const node = { agent, children: [] };
      byNumber.set(agent.number, node);
      const superior = byNumber.get(agent.number - 1);
      (superior ? superior.children : roots).push(node);
    }
    return roots;
  }

  /** The chat's usage totals, or null. */
  usage() {
    return this.chats.selectedState.usage || null;
  }

  /** Show only `number`'s items; the same number again clears the filter. */
  toggle(number) {
    this.setFilter(this.filter === number ? null : number);
  }

  setFilter(number) {
    if (this.filter === number) return;
    this.filter = number;
    this.emit("filter", number);
    this.emit("change");
  }
}
