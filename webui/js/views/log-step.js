// What a model call's row shows besides its headline: its thoughts and reasoning
// (folded once written), and for a reply that could not be used, why and what the
// model sent (folded), so each unusable reply of a series keeps its own.

import { h, setText } from "../dom.js";

/** A <details> the user may open; `auto` marks one opened by the page itself. */
export function fold(cls, summary, content, { open = false, testid = null } = {}) {
  const el = h("details", { class: cls, testid }, h("summary", {}, summary), content);
  el.open = open;
  if (open) el.dataset.auto = "1";
  // Once the user toggles it, the page leaves it as the user wants.
  el.firstElementChild.addEventListener("click", () => delete el.dataset.auto);
  return el;
}

export function kvpChanged(prev, item, key) {
  return !prev || JSON.stringify(prev.kvps[key]) !== JSON.stringify(item.kvps[key]);
}

/** A step's thoughts and reasoning, folded (open while written when `open`). */
export function buildStepParts(view, { open = false } = {}) {
  const p = view.parts;
  p.thoughtList = h("ol", { class: "thoughts-list" });
  p.thoughts = fold("li-thoughts", "Thoughts", p.thoughtList, { open });
  p.reasoningText = h("pre", { class: "li-reasoning-text" });
  p.reasoning = fold("li-reasoning", "Reasoning", p.reasoningText);
  p.thoughts.hidden = true;
  p.reasoning.hidden = true;
  return [p.thoughts, p.reasoning];
}

export function updateStepParts(view, item, prev) {
  const p = view.parts;
  if (kvpChanged(prev, item, "thoughts")) {
    const thoughts = item.kvps.thoughts || [];
    const list = Array.isArray(thoughts) ? thoughts : [String(thoughts)];
    const items = p.thoughtList.children;
    for (let i = 0; i < list.length; i++) {
      if (i < items.length) setText(items[i], list[i]);
      else p.thoughtList.append(h("li", {}, list[i]));
    }
    while (items.length > list.length) p.thoughtList.lastElementChild.remove();
    p.thoughts.hidden = list.length === 0;
  }
  if (kvpChanged(prev, item, "reasoning")) {
    setText(p.reasoningText, item.kvps.reasoning || "");
    p.reasoning.hidden = !item.kvps.reasoning;
  }
}

/** Why a reply was not used (what Cadre told the model) and the reply itself, folded. */
export function buildRejectedParts(view) {
  const p = view.parts;
  p.reasonText = h("span", { class: "li-reason-text" });
  p.reason = h("p", { class: "li-reason", testid: "step-reason", hidden: true },
    h("span", { class: "li-reason-label" }, "Not used. Cadre told the model: "), p.reasonText);
  p.replyText = h("pre", { class: "li-reply-text", testid: "step-reply-text" });
  p.reply = fold("li-reply", "What the model sent", p.replyText, { testid: "step-reply" });
  p.reply.hidden = true;
  return [p.reason, p.reply];
}

export function updateRejectedParts(view, item, prev) {
  const p = view.parts;
  if (kvpChanged(prev, item, "reason")) {
    setText(p.reasonText, item.kvps.reason || "");
    p.reason.hidden = !item.kvps.reason;
  }
  if (kvpChanged(prev, item, "reply")) {
    const reply = item.kvps.reply;
    setText(p.replyText, reply || "(nothing: the reply was empty)");
    p.reply.hidden = reply === undefined || reply === null;
  }
}
