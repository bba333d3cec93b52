// Toasts (new notifications, views/notifications.js decides which; the page's errors)
// and the connection banner.

import { byTestId, h } from "../dom.js";
import * as socket from "../socket.js";

const LIFETIME_MS = { error: 12000, warning: 8000 };
const DEFAULT_LIFETIME_MS = 5000;

export function mountNotices({ notices, chats }) {
  const stack = byTestId("toasts");
  const banner = byTestId("banner");

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
      notice.message ? h("div", { class: "toast-message" }, notice.message) : null,
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
