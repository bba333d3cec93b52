// Toasts: new notifications (views/notifications.js) and the page's own errors.

import { Emitter } from "../emitter.js";

let counter = 0;

export class NoticesStore extends Emitter {
  constructor() {
    super();
    this.items = [];
  }

  /** Show a toast: {title, message, type: info | success | warning | error}; `markdown`:
   * the message is markdown (an agent's), rendered as such. */
  push({ title = "", message = "", type = "info", chat_id: chatId = null, markdown = false }) {
    const notice = { id: ++counter, title, message, type, chatId, markdown };
    this.items.push(notice);
    this.emit("added", notice);
    return notice.id;
  }

  error(err, title = "Error") {
    return this.push({ title, message: err?.message || String(err), type: "error" });
  }

  dismiss(id) {
    this.items = this.items.filter((n) => n.id !== id);
    this.emit("removed", id);
  }
}
