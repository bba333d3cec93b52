// The delegation tree of the selected chat (from ChatState.agents) and the
// agent the log is filtered to. Each agent nests under its superior (A0 → A1 →
// A2; siblings working at once, A1.1 and A1.2, side by side under theirs).

import { Emitter } from "../emitter.js";

export class TreeStore extends Emitter {
  constructor(chatsStore) {
    super();
    this.chats = chatsStore;
    /** Name of the agent the log shows alone ("A1", "A1.2"), or null for everything. */
    this.filter = null;
    chatsStore.on("selected", () => this.setFilter(null));
    chatsStore.on("state", (chatId) => {
      if (chatId === chatsStore.selectedId) this.emit("change");
    });
  }

  /** The selected chat's agents, nested: [{agent, children: [...]}]. */
  tree() {
    const agents = this.chats.selectedState.agents || []; // superiors first (chain order)
    const roots = [];
    const byName = new Map();
    for (const agent of agents) {
      const node = { agent, children: [] };
      byName.set(nameOf(agent), node);
      const superior = byName.get(agent.superior ?? `A${agent.number - 1}`);
      (superior && agent.number > 0 ? superior.children : roots).push(node);
    }
    return roots;
  }

  /** The chat's usage totals, or null. */
  usage() {
    return this.chats.selectedState.usage || null;
  }

  /** Show only agent `name`'s items; the same name again clears the filter. */
  toggle(name) {
    this.setFilter(this.filter === name ? null : name);
  }

  setFilter(name) {
    if (this.filter === name) return;
    this.filter = name;
    this.emit("filter", name);
    this.emit("change");
  }
}

/** "A1", or "A1.2" for a sibling (older servers send no name). */
export function nameOf(agent) {
  return agent.name || `A${agent.number}`;
}
