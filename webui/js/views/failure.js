// A failed step in the log: the provider's raw text folded under "Details", a
// Retry button that runs the step again (an `error` item whose kvps carry
// `detail` and `retry`, see core/failed_step.py), and for a fault of the model's
// settings (`fault`: a refused key, an unknown model, no server) the setup dialog. The item's heading and
// text already say in plain words what failed and what to do.

import { postJson } from "../http.js";
import { h, setText } from "../dom.js";

/** kvps shown by these parts, not in the item's table. */
export const FAILURE_KEYS = ["fix", "detail", "retry", "retrying", "fault", "written"];
/** Faults the setup dialog fixes: a refused key, an unknown model or name, no server. */
const SETUP_FIXES = new Set(["key", "model", "prefix", "unreachable"]);

/** Add the Details fold and the Retry button to a notice's view. */
export function buildFailure(view) {
  const p = view.parts;
  p.detailText = h("pre", { class: "li-detail mono" });
  p.details = h("details", { class: "li-details", testid: "error-details", hidden: true },
    h("summary", {}, "Details"), p.detailText);
  p.retry = h("button", { type: "button", class: "btn small primary", testid: "retry-step", hidden: true },
    "Retry");
  p.retry.addEventListener("click", () => {
    p.retry.disabled = true;
    view.el.dispatchEvent(new CustomEvent("cadre:retry-step", {
      bubbles: true, detail: { itemId: view.item.id, button: p.retry },
    }));
  });
  // A member cannot change the model: the admin's (users.css hides .admin-only from them).
  p.setup = h("button", { type: "button", class: "btn small admin-only", testid: "error-setup", hidden: true },
    "Set up a model…");
  p.setup.addEventListener("click", () => {
    document.dispatchEvent(new CustomEvent("cadre:open-setup"));
  });
  view.el.append(h("div", { class: "li-failure" }, p.retry, p.setup, p.details));
}

export function updateFailure(view, item) {
  const p = view.parts;
  setText(p.detailText, item.kvps.detail || "");
  p.details.hidden = !item.kvps.detail;
  p.retry.hidden = item.kvps.retry !== true;
  p.setup.hidden = !SETUP_FIXES.has(item.kvps.fault);
  if (p.retry.hidden) p.retry.disabled = false;
}

/** Answer the Retry buttons of the log: the selected chat runs the failed step again. */
export function mountStepRetry({ chats, notices }) {
  document.addEventListener("cadre:retry-step", async (event) => {
    const { itemId, button } = event.detail;
    const chatId = chats.selectedId;
    if (!chatId) return;
    try {
      await postJson(`/api/chats/${encodeURIComponent(chatId)}/items/${encodeURIComponent(itemId)}/retry`, {});
    } catch (err) {
      button.disabled = false;
      notices.error(err, "Retry");
    }
  });
}
