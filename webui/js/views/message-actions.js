// "Edit" on each message you sent, "Resend" on your last. Every user item of the log
// gets a (hidden) bar through `messageActions`, called by log-item.js as the item is
// built; `mountMessageActions` shows the bars of messages that started a run, while the
// chat is idle. Edit opens the text in place; saving runs it again, edited: the last
// message in this chat (the server cuts the chat back to before it first: core/rerun.py),
// an earlier one in a new chat branched just before it, this one left as it is
// (branch-actions.js, core/chat_cut.py). Resend runs the last again as it was.

import { h } from "../dom.js";

/** The heading of a message that started a run (an intervention is not one). */
const USER_MESSAGE = "User message";

/** Set by `mountMessageActions`: place the bars again (after the log view built some). */
let refreshSoon = () => {};

/** The bar of one user item (log-item.js calls this as it builds the item). */
export function messageActions(view) {
  const edit = h("button", {
    type: "button", class: "btn small ghost", testid: "message-edit",
    title: "Change this message and run it again",
  }, "Edit");
  const resend = h("button", {
    type: "button", class: "btn small ghost", testid: "message-resend",
    title: "Run this message again as it is (the answer after it is replaced)",
  }, "Resend");
  const tell = (name) => () => view.el.dispatchEvent(new CustomEvent(name, {
    bubbles: true, detail: { no: view.item.no },
  }));
  edit.addEventListener("click", tell("cadre:edit-message"));
  resend.addEventListener("click", tell("cadre:resend-message"));
  const bar = h("div", {
    class: "msg-actions", testid: "message-actions", role: "group",
    "aria-label": "Your message", hidden: true,
  }, edit, resend);
  view.el.append(bar);
  refreshSoon();
}

/** Is `item` a message of yours that started a run (one Edit may change)? */
function isMessage(item) {
  return Boolean(item && item.type === "user" && item.agentno === 0 && item.heading === USER_MESSAGE);
}

/** The `no` of your last message (Resend's, and the one Edit changes in place), or null. */
function targetNo(items) {
  for (let no = items.length - 1; no >= 0; no--) {
    if (isMessage(items[no])) return no;
  }
  return null;
}

export function mountMessageActions(root, { chats, logStore, notices }) {
  /** The item being edited ({chatId, no}) while its editor is open. */
  let editing = null;
  let busy = false;
  let queued = false;

  function place() {
    queued = false;
    const chatId = chats.selectedId;
    const items = chatId ? logStore.get(chatId).items : [];
    const target = targetNo(items);
    const idle = chatId && !chats.stateOf(chatId).running && !busy;
    for (const bar of root.querySelectorAll('[data-testid="message-actions"]')) {
      const article = bar.closest('[data-testid="log-item"]');
      const no = Number(article?.dataset.no);
      const open = editing && editing.chatId === chatId && editing.no === no;
      bar.hidden = !(idle && isMessage(items[no]) && !open);
      bar.querySelector('[data-testid="message-resend"]').hidden = no !== target;
      bar.querySelector('[data-testid="message-edit"]').title = no === target
        ? "Change this message and run it again (the answer after it is replaced)"
        : "Change this message and run it in a new chat branched here (this chat stays as it is)";
    }
  }

  refreshSoon = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(place);
  };

  /** Run `message` (null: as it was) in place of your message `no`: the last one in this
   * chat, an earlier one in a new branch of it. */
  async function rerun(message, no = null) {
    const chatId = chats.selectedId;
    const last = no === null || no === targetNo(logStore.get(chatId).items);
    busy = true;
    place();
    try {
      if (last) await chats.rerun(chatId, message);
      else await chats.branch(chatId, no, message);
      editing = null;
      return true;
    } catch (err) {
      notices.error(err, message === null ? "Not resent" : "Not run again");
      return false;
    } finally {
      busy = false;
      place();
    }
  }

  function openEditor(article, no) {
    const item = logStore.get(chats.selectedId).items[no];
    if (!item || article.querySelector(".msg-editor")) return;
    // The editor takes the place of the text (or sits above the buttons if the item
    // draws its text differently).
    const text = article.querySelector(".li-text") || article.querySelector('[data-testid="message-actions"]');
    const hideText = text.classList.contains("li-text");
    editing = { chatId: chats.selectedId, no };
    const input = h("textarea", {
      class: "input msg-edit-input", testid: "message-edit-input", rows: 3,
      "aria-label": "Edit your message",
    });
    input.value = item.content;
    const inPlace = no === targetNo(logStore.get(chats.selectedId).items);
    const save = h("button", { type: "button", class: "btn small primary", testid: "message-save" },
      inPlace ? "Save and run" : "Save and run in a branch");
    const cancel = h("button", { type: "button", class: "btn small", testid: "message-cancel" }, "Cancel");
    const hint = h("span", { class: "muted small-text" }, "Ctrl+Enter runs it, Esc cancels");
    const editor = h("div", { class: "msg-editor", testid: "message-editor" },
      input, h("div", { class: "msg-editor-bar" }, save, cancel, hint));
    if (hideText) {
      text.hidden = true;
      text.after(editor);
    } else {
      text.before(editor);
    }

    function close() {
      editor.remove();
      if (hideText) text.hidden = false;
      editing = null;
      place();
    }
    async function submit() {
      const message = input.value.trim();
      if (!message) {
        notices.push({ title: "Not run again", message: "The message is empty: write something, or Cancel.", type: "warning" });
        return;
      }
      save.disabled = true;
      // The log starts over when the server has cut it back; the editor goes with it.
      if (await rerun(message, no)) close();
      else save.disabled = false;
    }
    save.addEventListener("click", submit);
    cancel.addEventListener("click", close);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        submit();
      } else if (event.key === "Escape") {
        event.preventDefault();
        close();
      }
    });
    place();
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }

  root.addEventListener("cadre:edit-message", (event) => {
    openEditor(event.target.closest('[data-testid="log-item"]'), event.detail.no);
  });
  root.addEventListener("cadre:resend-message", () => {
    rerun(null);
  });
  chats.on("selected", () => {
    editing = null;
    refreshSoon();
  });
  chats.on("state", refreshSoon);
  logStore.on("change", refreshSoon);
  refreshSoon();
}
