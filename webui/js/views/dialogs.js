// The page's own confirm and prompt dialogs (never window.confirm/prompt):
// one <dialog> reused, resolved through a Promise.

import { h } from "../dom.js";

let dialog = null;

function build() {
  const title = h("h2", { class: "dialog-title", id: "dialog-title" });
  const text = h("p", { class: "dialog-text", id: "dialog-text" });
  const input = h("input", { type: "text", class: "input", testid: "dialog-input", "aria-labelledby": "dialog-title",
    "aria-describedby": "dialog-text" });
  const cancel = h("button", { type: "button", class: "btn", testid: "confirm-cancel" }, "Cancel");
  const ok = h("button", { type: "submit", class: "btn primary", testid: "confirm-ok" }, "OK");
  const form = h("form", { method: "dialog", class: "dialog-form" },
    title, text, input, h("div", { class: "dialog-actions" }, cancel, ok));
  const el = h("dialog", { class: "dialog small", testid: "dialog", "aria-labelledby": "dialog-title" }, form);
  document.body.append(el);
  cancel.addEventListener("click", () => el.close("cancel"));
  ok.addEventListener("click", (event) => {
    event.preventDefault();
    el.close("ok");
  });
  return { el, title, text, input, cancel, ok };
}

function open({ title, text = "", value = null, okLabel = "OK", cancelLabel = "Cancel", danger = false }) {
  dialog ??= build();
  const d = dialog;
  d.title.textContent = title;
  d.text.textContent = text;
  d.text.hidden = !text;
  d.input.hidden = value === null;
  d.input.value = value ?? "";
  d.ok.textContent = okLabel;
  d.cancel.textContent = cancelLabel;
  d.ok.classList.toggle("danger", danger);
  d.el.returnValue = "";
  d.el.showModal();
  if (value !== null) {
    d.input.focus();
    d.input.select();
  } else (danger ? d.cancel : d.ok).focus(); // Enter must not delete by accident
  return new Promise((resolve) => {
    d.el.addEventListener("close", () => resolve(d.el.returnValue === "ok"), { once: true });
  });
}

/** Ask yes/no; resolves true when confirmed. */
export function confirmDialog(title, text = "", { okLabel = "OK", cancelLabel = "Cancel", danger = false } = {}) {
  return open({ title, text, okLabel, cancelLabel, danger });
}

/** Ask for a text (`text`: a line saying what to give); resolves with it, or null when
 * cancelled. */
export async function promptDialog(title, value = "", { okLabel = "Save", text = "" } = {}) {
  const ok = await open({ title, text, value, okLabel });
  return ok ? dialog.input.value : null;
}
