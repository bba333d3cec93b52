// The delegation tree panel: the selected chat's agents as a live tree with
// status, tokens and cost; clicking an agent filters the log to it. While an
// agent's call streams its tokens show as an estimate ("~120 tok") until the
// real usage arrives (see stores/live-tokens.js).

import { byTestId, compactNumber, h, setText } from "../dom.js";
import { LiveTokens } from "../stores/live-tokens.js";
import { nameOf } from "../stores/tree.js";

const STATUS_TEXT = { working: "working", waiting: "waiting on subordinates", done: "done", idle: "idle" };

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
  let counted = `prompt ${usage?.prompt_tokens || 0} + completion ${usage?.completion_tokens || 0} tokens, ${usage?.calls || 0} calls`;
  // By the model that answered (a call that moved to a fallback counts for the fallback).
  const models = Object.entries(usage?.models || {});
  if (models.length) counted += `; by model: ${models.map(([name, part]) => `${name} ${usageText(part)}, ${part.calls} calls`).join("; ")}`;
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

  /** The children of `parent`'s node: siblings of one team (A1.1, A1.2: names one level
   * deeper than their superior's) in a group of their own that says whose they are, so
   * they do not read as the children of an A1 listed beside them. */
  function childList(parent, children) {
    const depth = nameOf(parent).split(".").length;
    const groups = []; // a node, or [the nodes of one team]
    for (const child of children) {
      const sibling = nameOf(child.agent).split(".").length > depth;
      const last = groups[groups.length - 1];
      if (!sibling) groups.push(child);
      else if (Array.isArray(last)) last.push(child);
      else groups.push([child]);
    }
    const superior = nameOf(parent);
    return h("ul", { class: "tree-children" }, groups.map((group) => (!Array.isArray(group)
      ? node(group)
      : h("li", { class: "tree-team", testid: "tree-team" },
        h("span", { class: "tree-team-label" }, `${group.length} at once, for ${superior}`),
        h("ul", { class: "tree-children tree-team-list" }, group.map((c) => node(c, superior)))))));
  }

  function node({ agent, children }, teamOf = null) {
    const label = agent.title || agent.profile || ""; // "Researcher", as the header says it
    const name = nameOf(agent);
    const chosen = tree.filter === name;
    const working = agent.status === "working" && (chats.selectedState.working || []).length > 1;
    const button = h("button", {
      type: "button",
      class: "tree-agent",
      testid: "tree-agent",
      data: { agentno: agent.number, agent: name, status: agent.status },
      "aria-pressed": String(chosen),
      title: `${agent.title || agent.profile || ""}${teamOf ? `, working for ${teamOf} at once with its siblings` : ""}: show only ${name}'s items${chosen ? " (click again for all)" : ""}${working ? "; a message sent now goes to it alone" : ""}`,
    },
    h("span", { class: "tree-dot", "aria-hidden": "true" }),
    h("span", { class: "tree-name" }, name),
    h("span", { class: "tree-profile" }, label),
    // A held call: the agent waits for the person, not working (its status says "working").
    h("span", { class: "tree-status" }, agent.held ? "waiting for you" : STATUS_TEXT[agent.status] || agent.status || ""),
    agent.held ? h("span", {
      class: "tree-held", testid: "tree-held", title: `Its call of ${agent.held} waits for your answer`,
    }, `waits for you: ${agent.held}`) : null,
    h("span", {
      class: "tree-usage", title: usageTitle(agent.usage, estimates.get(name)),
    }, usageText(agent.usage, estimates.get(name))));
    button.addEventListener("click", () => tree.toggle(name));
    const li = h("li", { class: "tree-node" }, button);
    if (children.length) li.append(childList(agent, children));
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
      const name = nameOf(agent);
      const el = list.querySelector(`[data-agent="${name}"] .tree-usage`);
      if (!el) continue;
      setText(el, usageText(agent.usage, estimates.get(name)));
      el.title = usageTitle(agent.usage, estimates.get(name));
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
      const agent = (chats.selectedState.agents || []).find((a) => nameOf(a) === tree.filter);
      const label = agent?.title || agent?.profile;
      setText(filterText, `Showing only ${tree.filter}${label ? ` · ${label}` : ""}`);
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
