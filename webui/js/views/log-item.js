// One log item in the DOM: built once, then updated in place as the item
// changes (only the parts whose data changed are touched). How each kind looks
// is decided here; the Python side sends data only.

import { copyButton } from "../copy.js";
import { andList, clock, fullDate, h, setText } from "../dom.js";
import { agentKey } from "../nesting.js";
import { renderMarkdown } from "../render.js";
import { buildFailure, FAILURE_KEYS, updateFailure } from "./failure.js";
import { buildFallbackLine, updateFallbackLine } from "./log-fallback.js";
import { attachmentEntry, imageTiles } from "./log-images.js";
import { BROWSER } from "./log-browser.js";
import { MCP_TOOL } from "./log-mcp.js";
import {
  buildRejectedParts, buildStepParts, fold, kvpChanged, updateRejectedParts, updateStepParts,
} from "./log-step.js";
import { messageActions } from "./message-actions.js";
import { branchButton } from "./branch-actions.js";
import { toolTitle } from "../tool-titles.js";
import { kvpsTable, longText, setLongText, updateKvpsTable } from "./widgets.js";
import { updateApproval } from "./log-approval.js";
import { updatePluginView } from "./log-plugin.js";
import { speakButton } from "./voice-output.js";

/** kvps.status values that mean the step did not complete. */
const UNFINISHED = new Set(["interrupted", "stopped", "rejected", "failed"]);
/** Labels of the kinds that are messages of the framework. */
const NOTICE_LABELS = {
  warning: "Warning", error: "Error", info: "Info", hint: "Hint", notify: "Notice",
};

/** "A0: Planning" → "Planning" for an item of agent 0 (the chip shows the agent). */
function title(item) {
  const prefix = `${agentKey(item)}: `;
  return item.heading.startsWith(prefix) ? item.heading.slice(prefix.length) : item.heading;
}

/** "A1 · researcher" for a delegation; "A1.1, A1.2 at once" for siblings. */
export function delegationLabel(item) {
  const several = item.kvps.subordinates;
  if (Array.isArray(several)) return `${several.join(", ")} at once`;
  const who = item.kvps.subordinate || `A${item.agentno + 1}`;
  const profile = item.kvps.profile || "";
  return profile ? `${who} · ${profile}` : who;
}

/** A delegation's task; the numbered tasks of siblings started at once. */
function taskText(kvps) {
  if (!Array.isArray(kvps.tasks)) return String(kvps.message ?? "");
  return kvps.tasks.map((task, i) => `${i + 1}. ${task?.message ?? ""}`).join("\n");
}

export class ItemView {
  /** `live`: the item is being written now (its thoughts start unfolded); `speaker`: the
   * profile Agent 0 talks as after a handoff (its badge reads "A0 · Researcher"). */
  constructor(item, { live = false, chatId = null, speaker = null } = {}) {
    this.item = item;
    this.speaker = speaker;
    this.live = live;
    /** The chat the item belongs to (the address of its images). */
    this.chatId = chatId;
    this.parts = {};
    /** Children of a delegation block (subagent items only). */
    this.body = null;
    this.el = h("article", {
      class: `log-item kind-${item.type} agent-${item.agentno % 6}`,
      testid: "log-item",
      data: { type: item.type, no: item.no, agentno: item.agentno, agent: agentKey(item) },
    });
    this.el._no = item.no;
    const kind = KINDS[item.type] || GENERIC;
    this.kind = kind;
    this.head = this.buildHead(item);
    kind.build(this, item);
    this.update(item, true);
  }

  buildHead(item) {
    const p = this.parts;
    p.title = h("span", { class: "li-title" });
    p.badge = h("span", { class: "li-badge" });
    p.time = h("time", { class: "li-time" });
    const chip = item.type === "user" ? h("span", { class: "li-chip user" }, "You")
      : h("span", { class: "li-chip" }, this.speaker ? `${agentKey(item)} · ${this.speaker}` : agentKey(item));
    return h("header", { class: "li-head" }, chip, p.title, p.badge, p.time, branchButton(item));
  }

  /** Apply a newer version of the item. */
  update(item, first = false) {
    const prev = first ? null : this.item;
    this.item = item;
    const p = this.parts;
    if (first || prev.heading !== item.heading) this.setTitle();
    if (first) {
      setText(p.time, clock(item.timestamp));
      p.time.title = fullDate(item.timestamp);
    }
    const status = UNFINISHED.has(item.kvps.status) ? item.kvps.status : "";
    this.el.classList.toggle("is-unfinished", Boolean(status));
    setText(p.badge, status);
    this.kind.update(this, item, prev);
    updateApproval(this, item, prev); // a tool call held for an answer, of any kind
    updatePluginView(this, item); // a plugin's own drawing of its tools' items
  }

  setTitle() {
    setText(this.parts.title, this.kind.title?.(this.item, this) ?? title(this.item));
  }

  /** An answer card: the step that wrote it (its headline, thoughts, reasoning). */
  setStep(step) {
    if (!this.kind.step) return;
    const prev = this.step || null;
    this.step = step;
    if (!prev || prev.heading !== step.heading) this.setTitle();
    updateStepParts(this, step, prev);
  }

  /** The step is over: fold what was open only while it was being written. */
  settle() {
    const thoughts = this.parts.thoughts;
    if (thoughts && thoughts.dataset.auto === "1") {
      thoughts.open = false;
      delete thoughts.dataset.auto;
    }
  }
}

function changed(prev, item, key) {
  return !prev || prev[key] !== item[key];
}

/** "To A1.1, A1.2 and A1.3": whom an intervention went to ("" when the server named none). */
function recipientsText(to) {
  return Array.isArray(to) && to.length ? `To ${andList(to.map(String))}` : "";
}

const USER = {
  build(view) {
    // Whom it went to: a message to several agents at once is drawn in none of their blocks.
    view.parts.to = h("div", { class: "li-to", testid: "user-to" });
    view.parts.text = h("div", { class: "li-text" });
    view.parts.files = h("ul", { class: "li-files" });
    view.el.append(view.head, view.parts.to, view.parts.text, view.parts.files);
    messageActions(view); // Edit / Resend on your last message (habits part)
  },
  update(view, item, prev) {
    if (changed(prev, item, "content")) setText(view.parts.text, item.content);
    if (kvpChanged(prev, item, "to")) {
      setText(view.parts.to, recipientsText(item.kvps.to));
      view.parts.to.hidden = !view.parts.to.textContent;
    }
    if (kvpChanged(prev, item, "attachments")) {
      const files = item.kvps.attachments || [];
      view.parts.files.replaceChildren(...files.map((path) => attachmentEntry(view.chatId, path)));
    }
  },
};

const AGENT = {
  build(view) {
    const p = view.parts;
    p.tool = h("span", { class: "li-tool" });
    view.head.insertBefore(p.tool, p.badge);
    view.el.append(view.head, buildFallbackLine(view), ...buildStepParts(view, { open: view.live }),
      ...buildRejectedParts(view));
  },
  update(view, item, prev) {
    const p = view.parts;
    if (kvpChanged(prev, item, "tool_name")) {
      setText(p.tool, item.kvps.tool_name ? `→ ${item.kvps.tool_name}` : "");
    }
    updateFallbackLine(view, item, prev);
    updateStepParts(view, item, prev);
    updateRejectedParts(view, item, prev);
  },
};

/**
 * An answer: one card with the text, the step that wrote it folded in (its
 * headline as the title, its thoughts on demand) and a button copying the text
 * as markdown.
 */
const RESPONSE = {
  step: true,
  title: (item, view) => (view?.step ? title(view.step) : "Answer"),
  build(view) {
    const p = view.parts;
    p.copy = copyButton("Copy answer", {
      kind: "answer", getText: () => view.item.content, testid: "copy-answer",
    });
    view.head.insertBefore(p.copy, p.time);
    p.speak = speakButton(() => view.item.content); // Listen (views/voice-output.js)
    view.head.insertBefore(p.speak, p.copy);
    p.md = h("div", { class: "li-md md", testid: "response-body" });
    view.el.append(view.head, ...buildStepParts(view), p.md);
  },
  update(view, item, prev) {
    // A first render is usually of finished text (a chat opened): cache it.
    if (changed(prev, item, "content")) renderMarkdown(view.parts.md, item.content, { cache: !prev });
    view.parts.copy.hidden = !item.content;
    view.parts.speak.hidden = !item.content;
  },
};

/** Arguments as a table, the result below (both shortened, with "show all"); the title in
 * plain words, the tool's own name beside it. */
const TOOL = {
  title: (item) => toolTitle(title(item)).title,
  build(view) {
    const p = view.parts;
    p.tool = h("span", { class: "li-tool", testid: "tool-name" });
    view.head.insertBefore(p.tool, p.badge);
    p.table = kvpsTable();
    p.result = longText("li-result mono", 1200);
    p.images = h("ul", { class: "li-files li-images", "aria-label": "Images the agent looked at" });
    view.el.append(view.head, p.table, p.images, p.result);
  },
  update(view, item, prev) {
    const p = view.parts;
    if (changed(prev, item, "heading")) setText(p.tool, toolTitle(title(item)).tool);
    if (!prev || JSON.stringify(prev.kvps) !== JSON.stringify(item.kvps)) {
      updateKvpsTable(p.table, item.kvps, [...view.kind.skip, "images"]);
      p.images.replaceChildren(...imageTiles(view.chatId, item.kvps.images));
    }
    if (changed(prev, item, "content")) setLongText(p.result, item.content);
  },
};

const SUBAGENT = {
  title: (item) => delegationLabel(item),
  build(view) {
    const p = view.parts;
    p.task = longText("deleg-task", 600);
    p.action = h("div", { class: "deleg-action" });
    p.result = longText("li-result", 1200);
    p.resultFold = fold("deleg-result", "Result", p.result);
    view.body = h("div", { class: "deleg-body" });
    view.el.append(view.head, p.action, p.task, view.body, p.resultFold);
    view.el.classList.add("delegation");
  },
  update(view, item, prev) {
    const p = view.parts;
    if (["subordinate", "subordinates", "profile"].some((key) => kvpChanged(prev, item, key))) {
      setText(p.title, delegationLabel(item));
    }
    if (changed(prev, item, "heading")) setText(p.action, title(item));
    if (kvpChanged(prev, item, "message") || kvpChanged(prev, item, "tasks")) {
      setLongText(p.task, taskText(item.kvps));
    }
    if (changed(prev, item, "content")) {
      setLongText(p.result, item.content);
      p.resultFold.hidden = !item.content;
    }
  },
};

const CODE = {
  skip: ["code", "runtime", "status"],
  build(view) {
    const p = view.parts;
    p.code = longText("li-code mono", 2000);
    p.table = kvpsTable();
    p.output = longText("li-output mono", 4000);
    view.el.append(view.head, p.table, p.code, p.output);
    p.approvalAfter = p.code; // a held command's question below its code (log-approval.js)
  },
  update(view, item, prev) {
    const p = view.parts;
    if (kvpChanged(prev, item, "code")) {
      setLongText(p.code, item.kvps.code == null ? "" : String(item.kvps.code));
    }
    if (!prev || JSON.stringify(prev.kvps) !== JSON.stringify(item.kvps)) {
      updateKvpsTable(p.table, item.kvps, CODE.skip);
    }
    if (changed(prev, item, "content")) setLongText(p.output, item.content);
  },
};

/** Utility-model calls: folded away unless opened. */
const UTIL = {
  build(view) {
    const p = view.parts;
    p.text = longText("li-text", 2000);
    const summary = view.head;
    const box = h("details", { class: "li-util" }, h("summary", {}, summary), p.text);
    view.el.append(box);
  },
  update(view, item, prev) {
    if (changed(prev, item, "content")) setLongText(view.parts.text, item.content);
  },
};

/** A handoff's data (tools/handoff.py): its info line says it in words, the badges use it. */
const HANDOFF_KEYS = ["handoff", "from", "title", "back"];

function notice(kind) {
  return {
    // "Error" under the label ERROR says nothing twice.
    title: (item) => (title(item).toLowerCase() === kind ? "" : title(item)),
    build(view) {
      const p = view.parts;
      view.head.insertBefore(h("span", { class: "li-kind" }, NOTICE_LABELS[kind]), p.title);
      // An agent's message to the user (notify_user) is markdown, as its answers are.
      p.text = kind === "notify" ? h("div", { class: "li-md md", testid: "notify-body" })
        : longText("li-text", 3000);
      p.table = kvpsTable();
      view.el.append(view.head, p.text, p.table);
      if (kind === "error") buildFailure(view);
    },
    update(view, item, prev) {
      if (changed(prev, item, "content")) {
        if (kind === "notify") renderMarkdown(view.parts.text, item.content, { cache: !prev });
        else setLongText(view.parts.text, item.content);
      }
      if (!prev || JSON.stringify(prev.kvps) !== JSON.stringify(item.kvps)) {
        updateKvpsTable(view.parts.table, item.kvps, [
          "status", ...FAILURE_KEYS, ...(item.kvps.handoff ? HANDOFF_KEYS : []),
          ...(kind === "notify" ? ["type"] : []), // the notice's colour says it
        ]);
        if (kind === "error") updateFailure(view, item);
      }
    },
  };
}

const GENERIC = {
  build(view) {
    const p = view.parts;
    p.text = longText("li-text", 3000);
    p.table = kvpsTable();
    view.el.append(view.head, p.table, p.text);
  },
  update(view, item, prev) {
    if (changed(prev, item, "content")) setLongText(view.parts.text, item.content);
    if (!prev || JSON.stringify(prev.kvps) !== JSON.stringify(item.kvps)) {
      updateKvpsTable(view.parts.table, item.kvps, ["status"]);
    }
  },
};

const KINDS = {
  user: USER,
  agent: AGENT,
  response: RESPONSE,
  tool: { ...TOOL, skip: ["status"] },
  mcp_tool: MCP_TOOL,
  browser: BROWSER,
  subagent: SUBAGENT,
  code_exe: CODE,
  util: UTIL,
  warning: notice("warning"),
  error: notice("error"),
  info: notice("info"),
  hint: notice("hint"),
  notify: notice("notify"),
  input: { ...GENERIC, build: (view) => { GENERIC.build(view); view.parts.text.classList.add("mono"); } },
};
