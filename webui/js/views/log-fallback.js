// A model call that moved to a fallback model says so on its step's row, a line of its
// own: "openai/main refused: no credit or quota left; openai/backup answered"
// (models/llm.py MoveNotice, put on the row's `fallback` by core/reply/reply_stream.py).

import { h, setText } from "../dom.js";
import { kvpChanged } from "./log-step.js";

export function buildFallbackLine(view) {
  const p = view.parts;
  p.fallback = h("p", { class: "li-fallback", testid: "step-fallback", hidden: true });
  return p.fallback;
}

export function updateFallbackLine(view, item, prev) {
  if (!kvpChanged(prev, item, "fallback")) return;
  const p = view.parts;
  setText(p.fallback, item.kvps.fallback || "");
  p.fallback.hidden = !item.kvps.fallback;
}
