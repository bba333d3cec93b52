// Toasts (new notifications, views/notifications.js decides which; the page's errors)
// and the connection banner. While a modal dialog is open, the toasts are drawn in it:
// a modal dialog is drawn above the whole page (its top layer), which it makes inert.

import { byTestId, h } from "../dom.js";
import { renderMarkdown } from "../render.js";
import * as socket from "../socket.js";

const LIFETIME_MS = { error: 12000, warning: 8000 };
const DEFAULT_LIFETIME_MS = 5000;

function toastMessage(notice) {
  const el = h("div", { class: notice.markdown ? "toast-message md" : "toast-message" });
  if (notice.markdown) renderMarkdown(el, notice.message);
  else el.textContent = notice.message;
  return el;
}

export function mountNotices({ notices, chats }) {
  const stack = byTestId("toasts");
  const home = stack.parentElement;
  const banner = byTestId("banner");
  followModalDialogs(stack, home);

  notices.on("added", (notice) => {
    const close = h("button", { type: "button", class: "toast-close", "aria-label": "Dismiss" }, "×");
    // News of another chat links to it (the chat shown is where the eyes are already).
    const elsewhere = notice.chatId && notice.chatId !== chats.selectedId;
    const link = elsewhere
      ? h("a", { class: "toast-link", testid: "toast-open", href: `#/chat/${encodeURIComponent(notice.chatId)}` }, "Open chat")
      : null;
    link?.addEventListener("click", () => notices.dismiss(notice.id));
    const el = h("div", {
      class: `toast toast-${notice.type}`,
      testid: "toast",
      role: notice.type === "error" ? "alert" : "status",
      data: { type: notice.type, id: notice.id },
    },
    h("div", { class: "toast-body" },
      notice.title ? h("strong", { class: "toast-title" }, notice.title) : null,
      notice.message ? toastMessage(notice) : null,
      link),
    close);
    close.addEventListener("click", () => notices.dismiss(notice.id));
    stack.append(el);
    setTimeout(() => notices.dismiss(notice.id), LIFETIME_MS[notice.type] || DEFAULT_LIFETIME_MS);
  });
  notices.on("removed", (id) => stack.querySelector(`[data-id="${id}"]`)?.remove());

  socket.on("status", ({ status, detail }) => {
    banner.dataset.status = status;
    if (status === "connected") {
      banner.hidden = true;
      return;
    }
    banner.hidden = false;
    banner.textContent = `Connection lost${detail ? ` (${detail})` : ""}. Reconnecting…`;
  });
}

/**
 * Keep the toast stack in the modal dialog opened last, or at `home` when none is open.
 * Dialogs are opened and closed by many views (and made on the fly by some): the `open`
 * attribute of any of them is watched, in the order they opened.
 */
function followModalDialogs(stack, home) {
  const opened = [];
  const place = () => {
    const top = opened[opened.length - 1] || null;
    const host = top || home;
    if (stack.parentElement !== host) {
      if (top) host.append(stack);
      else host.prepend(stack);
    }
    stack.classList.toggle("in-dialog", Boolean(top));
  };
  new MutationObserver((records) => {
    for (const { target } of records) {
      if (target.tagName !== "DIALOG") continue; // a <details> of the log opened or closed
      const at = opened.indexOf(target);
      if (at >= 0) opened.splice(at, 1);
      if (target.open && target.matches(":modal")) opened.push(target);
    }
    place();
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["open"] });
}
