// The delegation tree panel: the selected chat's agents as a live tree with
// status, tokens and cost; clicking an agent filters the log to it.

import { byTestId, compactNumber, h, setText } from "../dom.js";

const STATUS_TEXT = { working: "working", waiting: "waiting on subordinate", done: "done", idle: "idle" };

function usageText(usage) {
  if (!usage) return "";
  const tokens = (usage.prompt_tokens || 0) + (usage.completion_tokens || 0);
  const parts = [`${compactNumber(tokens)} tok`];
  if (usage.cost) parts.push(`$${Number(usage.cost).toFixed(usage.cost < 0.01 ? 4 : 2)}`);
  return parts.join(" · ");
}

function usageTitle(usage) {
  if (!usage) return "";
  return `prompt ${usage.prompt_tokens || 0} + completion ${usage.completion_tokens || 0} tokens, ${usage.calls || 0} calls`;
}

export function mountTree(root, { tree, chats }) {
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
    h("span", { class: "tree-usage", title: usageTitle(agent.usage) }, usageText(agent.usage)));
    button.addEventListener("click", () => tree.toggle(agent.number));
    const li = h("li", { class: "tree-node" }, button);
    if (children.length) li.append(h("ul", { class: "tree-children" }, children.map(node)));
    return li;
  }

  function render() {
    const roots = tree.tree();
    list.replaceChildren(...roots.map(node));
    byTestId("agent-tree-empty", root).hidden = roots.length > 0;
    const usage = tree.usage();
    setText(total, usage ? `Total ${usageText(usage)}` : "");
    total.title = usageTitle(usage);

    filterBar.hidden = tree.filter === null;
    if (tree.filter !== null) {
      const agent = (chats.selectedState.agents || []).find((a) => a.number === tree.filter);
      setText(filterText, `Showing only A${tree.filter}${agent?.profile ? ` · ${agent.profile}` : ""}`);
    }
  }

  byTestId("filter-clear", document).addEventListener("click", () => tree.setFilter(null));
  tree.on("change", render);
  chats.on("selected", render);
  render();
}
