// Who may call whom (GET /api/profiles/graph), drawn as a picture on the settings
// page: every profile as a caller on the left, the profiles that can be called on
// the right (by title), an arrow for each allowed call (a workflow profile's arrows
// go to its steps only, dashed). The same facts follow as a plain list,
// the text alternative for screen readers and for reading a dense graph.

import { andList, h } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 34;
const WIDTH = 400;
const LEFT = 135; // where callers' titles end and arrows start
const RIGHT = 265; // where arrows end and callees' titles start
let drawn = 0; // numbers each picture: its ids stay unique on the page

function svg(tag, attrs = {}, text = "") {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  if (text) el.textContent = text;
  return el;
}

function label(profile) {
  return profile.title && profile.title !== profile.name ? `${profile.title} (${profile.name})` : profile.name;
}

/** The picture: callers left, callees right, one arrow per allowed call. */
function picture(graph, n, captionId) {
  const callers = graph.profiles;
  const callees = graph.profiles.filter((p) => p.subordinate);
  const rows = Math.max(callers.length, callees.length, 1);
  const height = rows * ROW + 30;
  const marker = `graph-arrow-${n}`;
  const root = svg("svg", {
    class: "profile-graph", viewBox: `0 0 ${WIDTH} ${height}`, role: "img",
    "aria-labelledby": captionId, "data-testid": "profile-graph-picture",
  });
  const defs = svg("defs");
  const head = svg("marker", { id: marker, viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  head.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "graph-arrowhead" }));
  defs.append(head);
  root.append(defs);
  root.append(svg("text", { x: LEFT, y: 14, "text-anchor": "end", class: "graph-heading" }, "calls"));
  root.append(svg("text", { x: RIGHT, y: 14, class: "graph-heading" }, "may be called"));
  const y = (index) => 30 + index * ROW + ROW / 2;
  const rowOf = new Map(callees.map((p, i) => [p.name, i]));
  callers.forEach((caller, i) => {
    for (const name of caller.calls) {
      if (!rowOf.has(name)) continue;
      const y1 = y(i);
      const y2 = y(rowOf.get(name));
      const path = svg("path", {
        d: `M ${LEFT + 8} ${y1} C ${(LEFT + RIGHT) / 2} ${y1}, ${(LEFT + RIGHT) / 2} ${y2}, ${RIGHT - 8} ${y2}`,
        class: "graph-edge", "marker-end": `url(#${marker})`,
        "data-from": caller.name, "data-to": name,
      });
      const verb = caller.workflow ? "runs" : "may call";
      if (caller.workflow) path.classList.add("is-workflow");
      path.append(svg("title", {}, `${label(caller)} ${verb} ${label(graph.profiles.find((p) => p.name === name))}`));
      root.append(path);
    }
    root.append(svg("text", { x: LEFT, y: y(i) + 4, "text-anchor": "end", class: "graph-node" },
      caller.title || caller.name));
  });
  callees.forEach((callee, i) => {
    root.append(svg("text", { x: RIGHT, y: y(i) + 4, class: "graph-node" }, callee.title || callee.name));
  });
  return root;
}

/** What a profile does with others, in words: " may call A, B." or, for a workflow
 * profile (which calls no one freely), " runs A and B at once, then C on their answers." */
function callsText(p, titles) {
  const named = (names) => names.map((name) => titles.get(name) || name);
  const flow = p.workflow;
  if (flow?.kind === "parallel") {
    return ` runs ${andList(named(flow.steps))} at once, then ${named([flow.aggregate])[0]} on their answers.`;
  }
  if (flow) return ` runs ${named(flow.steps).join(", then ")}, each on the answer before.`;
  return p.calls.length ? ` may call ${named(p.calls).join(", ")}.` : " may call no subordinates.";
}

/** The same graph in words: one line per profile. */
function list(graph) {
  const titles = new Map(graph.profiles.map((p) => [p.name, label(p)]));
  return h("ul", { class: "profile-graph-list", testid: "profile-graph-list" },
    ...graph.profiles.map((p) => h("li", { data: { profile: p.name } },
      h("strong", {}, label(p)), callsText(p, titles))));
}

/** The settings page's section: heading, picture, list. `graph` null: not loaded. */
export function profileGraphSection(graph) {
  const n = ++drawn;
  const captionId = `profile-graph-caption-${n}`;
  const caption = h("p", { class: "field-hint", id: captionId },
    "Which agent profiles may call which as subordinates (agent.yaml “subordinates”; "
    + "a project may narrow it in its settings.json). A workflow profile calls no one freely: "
    + "it runs its steps (agent.yaml “workflow”). The list below says the same.");
  const body = graph
    ? [picture(graph, n, captionId), list(graph)]
    : [h("p", { class: "field-error" }, "Could not load who may call whom.")];
  return h("fieldset", { class: "settings-section profile-graph-section", testid: "profile-graph" },
    h("legend", {}, "Who may call whom"), h("div", { class: "field wide" }, caption, ...body));
}
