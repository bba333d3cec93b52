// The notification history: the bell with its unread count (sidebar brand row, and a
// count on the Chats toggle where the sidebar is a drawer), the list dialog (mark read,
// mark all read, clear, each entry's link to its chat), and which new entries become
// toasts: every one, except a failed or finished run of the chat the page shows (seen
// there already: marked read at once).

import { byTestId, h, setText } from "../dom.js";
import { renderMarkdown } from "../render.js";
import { confirmDialog } from "./dialogs.js";

const KIND_LABEL = {
  notify: "Message", error: "Run failed", finished: "Run finished", approval: "Waiting for you",
};
const TYPE_LABEL = { info: "Info", success: "Success", warning: "Warning", error: "Error" };

function when(seconds) {
  const date = new Date(seconds * 1000);
  const today = date.toDateString() === new Date().toDateString();
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return today ? time : `${date.toLocaleDateString()} ${time}`;
}

/** An entry's text: markdown, as agents write it (notify_user), rendered and sanitized. */
function message(text) {
  const el = h("div", { class: "notification-message md", testid: "notification-message" });
  renderMarkdown(el, text, { cache: true });
  return el;
}

function chatHref(chatId) {
  return `#/chat/${encodeURIComponent(chatId)}`;
}

/** The chat's name now (chats are named after their first run, and renamed), or null
 * for a chat that is gone. */
function chatName(chats, chatId) {
  if (!chatId || !chats.chats.has(chatId)) return null;
  return chats.chats.get(chatId).name || "New chat";
}

export function mountNotifications({ notifications, notices, chats }) {
  const openButton = byTestId("notifications-open");
  const count = byTestId("notifications-count");
  const toggleCount = byTestId("chats-toggle-unread");
  const dialog = byTestId("notifications");
  const list = byTestId("notification-list");
  const empty = byTestId("notifications-empty");
  const summary = byTestId("notifications-summary");
  const readAll = byTestId("notifications-read-all");
  const clear = byTestId("notifications-clear");

  const failed = (title) => (err) => notices.error(err, title);

  function entry(item) {
    const kind = KIND_LABEL[item.kind] || "Message";
    const head = h("div", { class: "notification-head" },
      h("span", { class: `notification-type type-${item.type}` }, TYPE_LABEL[item.type] || "Info"),
      h("strong", { class: "notification-title" }, item.title || kind),
      h("time", { class: "muted", datetime: new Date(item.time * 1000).toISOString() }, when(item.time)));
    const name = chatName(chats, item.chat_id);
    const where = item.chat_id
      ? h("span", { class: "notification-chat muted" }, name ? `in “${name}”` : "in a deleted chat")
      : null;
    const actions = h("div", { class: "notification-actions" }, where);
    if (name) {
      const link = h("a", {
        class: "btn small", testid: "notification-open", href: chatHref(item.chat_id),
        "aria-label": `Open chat “${name}”`,
      }, "Open chat");
      link.addEventListener("click", () => {
        if (!item.read) notifications.markRead([item.id]).catch(failed("Notifications"));
        dialog.close();
        // Opened from the chat list's drawer (a phone): the chat is what to see now.
        if (document.querySelector(".app").dataset.drawer === "chats") byTestId("chats-close").click();
      });
      actions.append(link);
    }
    if (!item.read) {
      const mark = h("button", {
        type: "button", class: "btn small", testid: "notification-read",
        "aria-label": `Mark read: “${item.title || kind}”`,
      }, "Mark read");
      mark.addEventListener("click", () => notifications.markRead([item.id]).catch(failed("Notifications")));
      actions.append(mark);
    }
    const li = h("li", {
      class: `notification${item.read ? "" : " unread"}`, testid: "notification",
      data: { id: item.id, kind: item.kind, type: item.type, read: String(item.read) },
      "aria-label": `${item.read ? "" : "Unread: "}${kind}: ${item.title}`,
    }, head, item.message ? message(item.message) : null, actions);
    return li;
  }

  function render() {
    const { unread, items } = notifications;
    const label = unread ? `${unread > 99 ? "99+" : unread}` : "";
    for (const badge of [count, toggleCount]) {
      setText(badge, label);
      badge.hidden = !unread;
    }
    openButton.setAttribute("aria-label", unread ? `Notifications, ${unread} unread` : "Notifications");
    // In words inside the button, not an aria-label: a label must hold the text shown
    // ("Chats3"), which reads as nothing (axe: label-content-name-mismatch).
    setText(byTestId("chats-toggle-unread-words"), unread ? `, ${unread} unread notifications` : "");
    setText(summary, items.length ? `${unread} unread of ${items.length}` : "");
    readAll.disabled = !unread;
    clear.disabled = !items.length;
    empty.hidden = items.length > 0;
    if (dialog.open) fill();
  }

  /** The list drawn again, the keyboard focus kept on the entry it was in (its button,
   * or the entry's first one when that button is gone: a "Mark read" just used). */
  function fill() {
    const focused = document.activeElement;
    const row = list.contains(focused) ? focused.closest('[data-testid="notification"]') : null;
    const index = row ? [...list.children].indexOf(row) : -1;
    list.replaceChildren(...notifications.items.map(entry));
    if (!row) return;
    const same = [...list.children].find((li) => li.dataset.id === row.dataset.id)
      || list.children[Math.min(index, list.children.length - 1)];
    const target = same?.querySelector(`[data-testid="${focused.dataset.testid}"]`)
      || same?.querySelector("a, button") || readAll;
    target.focus();
  }

  openButton.addEventListener("click", () => {
    fill();
    dialog.showModal();
    (list.querySelector("a, button") || byTestId("notifications-close")).focus();
  });
  byTestId("notifications-close").addEventListener("click", () => dialog.close());
  readAll.addEventListener("click", () => notifications.markRead().catch(failed("Notifications")));
  clear.addEventListener("click", async () => {
    const sure = await confirmDialog("Clear every notification?",
      "The list is emptied; the chats keep their logs.", { okLabel: "Clear", danger: true });
    if (sure) notifications.clear().catch(failed("Notifications"));
  });
  notifications.on("changed", render);

  notifications.on("added", (item) => {
    const here = item.chat_id && item.chat_id === chats.selectedId && !document.hidden;
    if (item.kind !== "notify" && here) {
      notifications.markRead([item.id]).catch(failed("Notifications"));
      return;
    }
    const name = chatName(chats, item.chat_id);
    // A run's news says which chat; a message from an agent has a title of its own.
    const title = item.kind !== "notify" && name ? `${item.title}: ${name}` : item.title;
    notices.push({
      title, message: item.message, type: item.type, chat_id: name ? item.chat_id : null,
      markdown: true,
    });
  });
  render();
}
