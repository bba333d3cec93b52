// Copy buttons: one page-wide click listener serves every "copy" button, so the
// buttons inside cached (cloned) markdown need no listeners of their own. A
// button says what happened ("Copied", "Press Ctrl+C") for a moment, in its own
// label, which screen readers read out as it changes.

import { h } from "./dom.js";

/** Milliseconds a button shows the outcome before it says "Copy" again. */
const FEEDBACK_MS = 1600;

/** Code text a copy button of a rendered code block takes (its <pre>'s code). */
function codeText(button) {
  const code = button.closest(".code-block")?.querySelector("pre > code");
  return code ? code.textContent.replace(/\n$/, "") : "";
}

/** A copy button; `kind` "code" copies its code block, else `getText()` gives the text. */
export function copyButton(label, { kind = "code", getText = null, testid = "copy" } = {}) {
  const button = h("button", {
    type: "button", class: "copy-btn", testid, "aria-label": label, title: label,
    data: { copy: kind, label },
  }, "Copy");
  if (getText) button._copyText = getText;
  return button;
}

/** Put `text` on the clipboard; "copied", or "manual" when the user must press Ctrl+C. */
export async function copyText(text) {
  // The Clipboard API exists only in a secure context (https, localhost): not on
  // http at a LAN address, where the older copy command still works.
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return "copied";
    } catch {
      // Refused (no permission, page not focused): try the older way below.
    }
  }
  return copyBySelection(text) ? "copied" : "manual";
}

/** Copy through a selected, off-screen text area and the copy command. */
function copyBySelection(text) {
  const area = h("textarea", { class: "copy-buffer", readonly: true, "aria-hidden": "true" });
  area.value = text;
  const focused = document.activeElement;
  document.body.append(area);
  area.focus({ preventScroll: true });
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  if (focused instanceof HTMLElement) focused.focus({ preventScroll: true });
  return ok;
}

const OUTCOME = { copied: "Copied", manual: "Press Ctrl+C" };

function showOutcome(button, outcome) {
  const word = OUTCOME[outcome];
  button.textContent = word;
  button.setAttribute("aria-label", word);
  button.classList.toggle("is-done", outcome === "copied");
  clearTimeout(button._copyTimer);
  button._copyTimer = setTimeout(() => {
    button.textContent = "Copy";
    button.setAttribute("aria-label", button.dataset.label);
    button.classList.remove("is-done");
  }, FEEDBACK_MS);
}

/**
 * A "Copy" button for a read-only field beside it (an invite link, a new key): it says how
 * the copy went, and when nothing could be copied it selects the field's text for Ctrl+C.
 */
export function fieldCopyButton(input, { label, testid }) {
  const button = h("button", {
    type: "button", class: "btn small", testid, "aria-label": label, data: { label },
  }, "Copy");
  button.addEventListener("click", async () => {
    const outcome = await copyText(input.value);
    if (outcome === "manual") {
      input.focus();
      input.select();
    }
    showOutcome(button, outcome);
  });
  return button;
}

/** When nothing could be copied, leave the text selected for Ctrl+C. */
function selectForManualCopy(button) {
  const target = button.dataset.copy === "code"
    ? button.closest(".code-block")?.querySelector("pre > code")
    : button.closest(".log-item")?.querySelector(".md");
  if (!target) return;
  const range = document.createRange();
  range.selectNodeContents(target);
  const selection = document.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

/** Listen once, for the whole page. */
export function installCopyButtons(root = document) {
  root.addEventListener("click", async (event) => {
    const button = event.target.closest?.("button[data-copy]");
    if (!button) return;
    event.preventDefault();
    const text = button._copyText ? button._copyText() : codeText(button);
    const outcome = await copyText(text);
    if (outcome === "manual") selectForManualCopy(button);
    showOutcome(button, outcome);
  });
}
