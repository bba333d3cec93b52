// The delegation tree panel: the selected chat's agents as a live tree with
// status, tokens and cost; clicking an agent filters the log to it. While an
// agent's call streams its tokens show as an estimate ("~120 tok") until the
// real usage arrives (see stores/live-tokens.js).

import { byTestId, compactNumber, h, setText } from "../dom.js";
import { LiveTokens } from "../stores/live-tokens.js";

const STATUS_TEXT = { working: "working", waiting: "waiting on subordinate", done: "done", idle: "idle" };

/** "1.2k tok · $0.01"; with `live` tokens of a call still streaming, "~1.3k tok …". */
function usageText(usage, live = 0) {
  if (!usage && !live) return "";
  const tokens = (usage?.prompt_tokens || 0) + (usage?.completion_tokens || 0) + live;
  const parts = [`${live ? "~" : ""}${compactNumber(tokens)} tok`];
  if (usage?.cost) parts.push(`$${Number(usage.cost).toFixed(usage.cost < 0.01 ? 4 : 2)}`);
  return parts.join(" · ");
}

function usageTitle(usage, live = 0) {
  if (!usage && !live) return "";
  const counted = `prompt ${usage?.prompt_tokens || 0} + completion ${usage?.completion_tokens || 0} tokens, ${usage?.calls || 0} calls`;
  if (!live) return counted;
  return `${counted}; about ${live} more being written now (an estimate, characters / 4; the real count replaces it when the call ends)`;
}

export function mountTree(root, { tree, chats, logStore }) {
  const live = new LiveTokens(logStore, chats);
  let estimates = new Map();
  let shown = "";
  const list = byTestId("agent-tree", root);
  const total = byTestId("usage-total", root);
  const filterBar = byTestId("filter-bar", document);
  const filterText = filterBar.querySelector(".filter-text");

  function node({ agent, children }) {
    const label = agent.profile || agent.title || "";
    const button = h("button", {
      type: "button",
      class: "tree-agent",
      testid: "tree-agent",
      data: { agentno: agent.number, status: agent.status },
      "aria-pressed": String(tree.filter === agent.number),
      title: `${agent.title || agent.profile || ""}: show only A${agent.number}'s items${tree.filter === agent.number ? " (click again for all)" : ""}`,
    },
    h("span", { class: "tree-dot", "aria-hidden": "true" }),
    h("span", { class: "tree-name" }, `A${agent.number}`),
    h("span", { class: "tree-profile" }, label),
    h("span", { class: "tree-status" }, STATUS_TEXT[agent.status] || agent.status || ""),
    h("span", {
      class: "tree-usage", title: usageTitle(agent.usage, estimates.get(agent.number)),
    }, usageText(agent.usage, estimates.get(agent.number))));
    button.addEventListener("click", () => tree.toggle(agent.number));
    const li = h("li", { class: "tree-node" }, button);
    if (children.length) li.append(h("ul", { class: "tree-children" }, children.map(node)));
    return li;
  }

  function renderTotal() {
    const usage = tree.usage();
    const streaming = [...estimates.values()].reduce((sum, n) => sum + n, 0);
    setText(total, usage || streaming ? `Total ${usageText(usage, streaming)}` : "");
    total.title = usageTitle(usage, streaming);
  }

  /** Only the numbers, in place (a redraw would take the keyboard focus away). */
  function renderEstimates() {
    estimates = live.estimates();
    shown = signature(estimates);
    for (const agent of chats.selectedState.agents || []) {
      const el = list.querySelector(`[data-agentno="${agent.number}"] .tree-usage`);
      if (!el) continue;
      setText(el, usageText(agent.usage, estimates.get(agent.number)));
      el.title = usageTitle(agent.usage, estimates.get(agent.number));
    }
    renderTotal();
  }

  function render() {
    estimates = live.estimates();
    shown = signature(estimates);
    const roots = tree.tree();
    list.replaceChildren(...roots.map(node));
    byTestId("agent-tree-empty", root).hidden = roots.length > 0;
    renderTotal();

    filterBar.hidden = tree.filter === null;
    if (tree.filter !== null) {
      const agent = (chats.selectedState.agents || []).find((a) => a.number === tree.filter);
      setText(filterText, `Showing only A${tree.filter}${agent?.profile ? ` · ${agent.profile}` : ""}`);
    }
  }

  byTestId("filter-clear", document).addEventListener("click", () => tree.setFilter(null));
  tree.on("change", render);
  chats.on("selected", render);
  // Streamed text moves the estimate: redraw only when a shown number changes.
  logStore.on("change", ({ chatId }) => {
    if (chatId === chats.selectedId && signature(live.estimates()) !== shown) renderEstimates();
  });
  render();
}

function signature(estimates) {
  return [...estimates].map(([n, tokens]) => `${n}:${compactNumber(tokens)}`).join(",");
}
