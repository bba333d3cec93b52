// A tool call held for the person's answer (the tool policy's "ask": kvps.approval is
// "pending"), on the call's own log item, whatever its kind: the question, Allow,
// Allow always (for this chat; an admin may save it as a rule), and Deny with a
// reason the agent reads. Once answered, one line says how ("Allowed", "Denied: ...",
// "Refused by a rule"). The arguments are the item's own table, above it.
//
// The buttons ask the log view to answer (event "cadre:approve", detail {itemId,
// approved, reason, always}); the view sends `chat:approve`.

import { h, setText } from "../dom.js";

/** kvps keys of the approval, shown here and not in the arguments' table. */
export const APPROVAL_KEYS = ["approval", "approval_tool", "approval_reason"];

const STATE_TEXT = {
  allowed: "Allowed",
  denied: "Denied",
  refused: "Refused by a rule of the tool policy",
  cancelled: "No longer waiting (the run stopped)",
};

function answer(view, approved, always = "") {
  const reason = approved ? "" : view.parts.approvalReason.value.trim();
  view.el.dispatchEvent(new CustomEvent("cadre:approve", {
    bubbles: true, detail: { itemId: view.item.id, approved, reason, always },
  }));
}

function button(label, cls, testid, onClick, title = "") {
  const el = h("button", { type: "button", class: `btn small ${cls}`, testid, title }, label);
  el.addEventListener("click", onClick);
  return el;
}

function build(view) {
  const p = view.parts;
  const reasonId = `deny-reason-${view.item.id}`;
  p.approvalQuestion = h("span", { class: "li-approval-text", testid: "approval-question" });
  p.approvalReason = h("input", {
    type: "text", id: reasonId, class: "li-approval-reason", testid: "deny-reason",
    maxlength: 2000, placeholder: "Why not? The agent reads it (optional)",
  });
  // A rule changes the server's settings: an admin's (users.css hides .admin-only from members).
  p.approvalRule = button("Allow always (save a rule)", "admin-only", "approve-rule",
    () => answer(view, true, "rule"),
    "Saves an allow rule in Settings (Tool rules): later calls of this tool run without asking");
  p.approval = h("div", {
    class: "li-approval", testid: "approval", role: "group", hidden: true,
    "aria-label": "This call waits for your answer",
  },
  p.approvalQuestion,
  h("div", { class: "li-approval-actions" },
    button("Allow", "primary", "approve", () => answer(view, true)),
    button("Allow always in this chat", "", "approve-chat", () => answer(view, true, "chat")),
    p.approvalRule),
  h("div", { class: "li-approval-deny" },
    h("label", { for: reasonId, class: "visually-hidden" }, "Reason for denying"),
    p.approvalReason,
    button("Deny", "danger", "deny", () => answer(view, false))));
  p.approvalReason.addEventListener("keydown", (event) => {
    if (event.key === "Enter") answer(view, false);
  });
  p.approvalState = h("div", { class: "li-approval-state", testid: "approval-state", hidden: true });
  // Below the call's arguments, above its result.
  const after = p.approvalAfter || p.table || view.head;
  after.after(p.approval, p.approvalState);
}

/** Show (or hide) the item's approval; built on its first need. */
export function updateApproval(view, item, prev) {
  const state = item.kvps.approval;
  const p = view.parts;
  if (!state && !p.approval) return;
  if (!p.approval) build(view);
  if (prev && APPROVAL_KEYS.every((k) => prev.kvps[k] === item.kvps[k])) return;
  const pending = state === "pending";
  p.approval.hidden = !pending;
  const who = item.agent || `A${item.agentno}`;
  setText(p.approvalQuestion, `Allow ${who} to use ${item.kvps.approval_tool || "this tool"}?`);
  const said = STATE_TEXT[state] || "";
  const reason = item.kvps.approval_reason ? `: ${item.kvps.approval_reason}` : "";
  setText(p.approvalState, pending || !said ? "" : `${said}${reason}`);
  p.approvalState.hidden = pending || !said;
  p.approvalState.dataset.state = state || "";
}
