// The agent profiles on the settings page (GET /api/profiles): one collapsible row per
// profile saying in plain words whether it is ready, what in it will not work as
// written (an include no folder has, a tool that failed to load or has no prompt
// file) and where each of its files comes from (shipped, user: usr/agents/, own: the
// asker's own agents/ folder, project:<name>, plugin:<name>). A profile with a problem
// starts open.

import { h } from "../dom.js";

const ORIGIN_WORDS = {
  shipped: "shipped with Cadre",
  user: "usr/agents",
  own: "your own agents/ folder",
};

function origin(text) {
  if (ORIGIN_WORDS[text]) return ORIGIN_WORDS[text];
  const [kind, name] = text.split(":");
  return name ? `${kind} ${name}` : text;
}

function summaryWords(p, status) {
  if (!p.available) return p.error ? `unavailable: ${p.error}` : "turned off";
  const notes = [];
  if (status.unavailable_tools.length) {
    const n = status.unavailable_tools.length;
    notes.push(`${n} tool${n === 1 ? "" : "s"} cannot be used`);
  }
  if (status.warnings.length) {
    const n = status.warnings.length;
    notes.push(`${n} warning${n === 1 ? "" : "s"}`);
  }
  if (!p.subordinate) notes.push("not offered to subordinates");
  return notes.length ? `ready; ${notes.join(", ")}` : "ready";
}

function profileRow(p) {
  const status = p.status || { files: [], warnings: [], unavailable_tools: [] };
  const troubled = !p.available || status.warnings.length || status.unavailable_tools.length;
  const state = !p.available ? "unavailable" : troubled ? "warning" : "ready";
  const name = p.title && p.title !== p.name ? `${p.title} (${p.name})` : p.name;
  const parts = [];
  if (p.error) parts.push(h("p", { class: "profile-status-error" }, p.error));
  if (status.unavailable_tools.length) {
    parts.push(h("p", { class: "profile-status-title" }, "Tools its agents cannot use"),
      h("ul", { class: "profile-status-list", testid: "profile-unavailable-tools" },
        ...status.unavailable_tools.map((t) => h("li", {}, h("code", {}, t.name), `: ${t.reason}`))));
  }
  if (status.warnings.length) {
    parts.push(h("p", { class: "profile-status-title" }, "Warnings"),
      h("ul", { class: "profile-status-list", testid: "profile-warnings" },
        ...status.warnings.map((w) => h("li", {}, w))));
  }
  parts.push(h("p", { class: "profile-status-title" }, "Files, and where each comes from"),
    status.files.length
      ? h("ul", { class: "profile-files", testid: "profile-files" },
        ...status.files.map((f) => h("li", { data: { origin: f.origin } },
          h("code", {}, f.path), h("span", { class: "profile-origin" }, origin(f.origin)))))
      : h("p", { class: "muted" }, "None of its own: it uses the shared prompts and tools."));
  const details = h("details", { class: "profile-status", testid: "profile-status", data: { profile: p.name, state } },
    h("summary", {}, h("strong", {}, name), " ",
      h("span", { class: "profile-status-words" }, summaryWords(p, status))),
    ...parts);
  details.open = Boolean(troubled);
  return h("li", {}, details);
}

/** The settings page's section listing every profile with its status. */
export function profileStatusSection(profiles) {
  const caption = h("p", { class: "field-hint" },
    "Every agent profile Cadre found (agents/, usr/agents/, plugins, the project), "
    + "with what does not work in it and where its files come from. A file in usr/agents/ "
    + "replaces the shipped file of the same name.");
  return h("fieldset", { class: "settings-section profile-status-section", testid: "profile-statuses" },
    h("legend", {}, "Agent profiles"),
    h("div", { class: "field wide" }, caption,
      h("ul", { class: "profile-status-rows" }, ...profiles.map(profileRow))));
}
