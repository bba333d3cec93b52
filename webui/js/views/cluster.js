// The cluster dialog (an admin's, from Settings): the nodes of a Cadre that runs as several
// processes sharing Redis (docs/scaling.md), each with where it serves, since when, its
// running chats against its limit, whether it drains and the runs it took from the queue.
// Settings asks GET /api/cluster once as it opens: in a process alone the Cluster button
// stays hidden (a newcomer on one machine has no cluster to look at); a 503 (Redis does not
// answer) comes only from a cluster, so the button shows and the dialog says the error.

import { byTestId, h, sentence } from "../dom.js";
import { fetchJson } from "../http.js";

/** The running chats named in a node's row; the rest are counted ("and 12 more"). */
const CHATS_SHOWN = 20;

/** A chat's id short enough to scan: a full id is 16 hex digits, 8 tell them apart. */
function shortId(id) {
  return id.length > 10 ? `${id.slice(0, 8)}…` : id;
}

/** "12 Mar 2025, 14:03" in the reader's own time zone and language. */
function localTime(iso) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso;
  return when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** Chats running against the limit: the words (what a screen reader reads) and a bar
 * drawn beside them for the eye alone. */
function loadRow(node) {
  const text = node.limit
    ? `${node.runs} of ${node.limit} (${Math.round((node.runs / node.limit) * 100)}%)`
    : String(node.runs);
  const parts = [h("span", { testid: "cluster-load" }, text)];
  if (node.limit) {
    const share = Math.min(1, node.runs / node.limit);
    const fill = h("span", { class: "cluster-bar-fill" });
    // A single run out of 32 is still seen: the bar never fills less than a sliver.
    fill.style.width = node.runs ? `max(4px, ${(share * 100).toFixed(1)}%)` : "0";
    parts.push(h("span", { class: `cluster-bar${share >= 1 ? " full" : ""}`, "aria-hidden": "true" }, fill));
  }
  return h("dd", { class: "cluster-load" }, ...parts);
}

function chatsRow(chats) {
  if (!chats.length) return h("dd", { testid: "cluster-chats" }, "none");
  const shown = chats.slice(0, CHATS_SHOWN).map((id) => h("code", { class: "cluster-chat", title: id }, shortId(id)));
  const more = chats.length > CHATS_SHOWN ? ` and ${chats.length - CHATS_SHOWN} more` : "";
  return h("dd", { class: "cluster-chats", testid: "cluster-chats" }, ...shown, more);
}

function nodeItem(node, here) {
  const mine = node.node === here;
  const title = h("div", { class: "cluster-node-title" },
    h("span", { class: "cluster-node-name", testid: "cluster-node-name" }, node.node),
    mine ? h("span", { class: "cluster-tag", testid: "cluster-this" }, "this node") : null,
    node.draining ? h("span", { class: "cluster-tag draining", testid: "cluster-draining" }, "draining") : null);
  const facts = h("dl", { class: "cluster-facts" },
    h("dt", {}, "Serves at"), h("dd", { class: "cluster-address" }, node.address),
    h("dt", {}, "Started"), h("dd", { testid: "cluster-started" }, localTime(node.started)),
    h("dt", {}, "Chats running"), loadRow(node),
    h("dt", {}, "Chat ids"), chatsRow(node.chats),
    h("dt", {}, "Runs taken from the queue"), h("dd", { testid: "cluster-taken" }, String(node.taken)));
  const note = node.draining
    ? h("p", { class: "cluster-note" },
      "Stopping: it takes no new runs. Its running chats go on for a while, then another node takes them over.")
    : null;
  return h("li", { class: "cluster-node", testid: "cluster-node",
    data: { node: node.node, this: String(mine), draining: String(node.draining) } }, title, note, facts);
}

export function mountCluster() {
  const dialog = byTestId("cluster");
  const open = byTestId("settings-cluster");
  const refresh = byTestId("cluster-refresh");
  const status = byTestId("cluster-status");
  const error = byTestId("cluster-error");
  const list = byTestId("cluster-nodes");

  function say(text, problem = "") {
    status.textContent = text;
    error.textContent = sentence(problem);
    error.hidden = !problem;
  }

  let loading = false;

  async function load() {
    // Refresh stays enabled while it asks: a button disabled under the keyboard's focus
    // would drop the focus out of the dialog.
    if (loading) return;
    loading = true;
    list.setAttribute("aria-busy", "true");
    say("Asking the nodes…");
    try {
      const data = await fetchJson("/api/cluster");
      list.replaceChildren(...data.nodes.map((node) => nodeItem(node, data.node)));
      const checked = new Date().toLocaleTimeString();
      say(data.cluster
        ? `${plural(data.nodes.length, "node")} in this cluster, checked at ${checked}.`
        : "This Cadre runs as one process: it has no other nodes.");
    } catch (err) {
      list.replaceChildren();
      say("", err.message);
    } finally {
      loading = false;
      list.removeAttribute("aria-busy");
    }
  }

  /** Settings opens: is this Cadre a cluster? Only then is the button there. */
  async function check() {
    try {
      open.hidden = !(await fetchJson("/api/cluster")).cluster;
    } catch (err) {
      // A process alone never answers 503 here: only a cluster whose Redis is away does.
      open.hidden = err.status !== 503;
    }
  }

  byTestId("settings-open").addEventListener("click", check);
  // On top of Settings: Close goes back to it, with whatever was typed there kept.
  open.addEventListener("click", () => {
    list.replaceChildren();
    dialog.showModal();
    load();
  });
  refresh.addEventListener("click", load);
  byTestId("cluster-close").addEventListener("click", () => dialog.close());
}
