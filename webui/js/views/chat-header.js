// The selected chat's header: its name, its project, who talks with the user (another
// profile after a handoff), its model (chat-model.js) and the actions on it (rename, reset,
// export, replay: chat-replay.js, delete).
// Destructive actions ask first, in the page's own dialog.

import { byTestId, h, setText } from "../dom.js";
import { mountChatModel } from "./chat-model.js";
import { mountChatReplay } from "./chat-replay.js";
import { confirmDialog, promptDialog } from "./dialogs.js";

export function mountChatHeader(root, { chats, notices }) {
  const title = byTestId("chat-title", root);
  const rename = byTestId("chat-rename", root);
  const reset = byTestId("chat-reset", root);
  const exportLink = byTestId("chat-export", root);
  const remove = byTestId("chat-delete", root);
  const talker = byTestId("chat-talker", root);
  const project = byTestId("chat-project", root);
  // A branch's way back to the chat it came from (store/chat_branches.py).
  const parentLink = h("a", { class: "chat-parent", testid: "chat-parent", hidden: true });
  project.after(parentLink);

  /** "Talking with Researcher · handed over by Agent 0", from the chat's state. */
  function renderTalker() {
    const who = chats.selected ? chats.selectedState.talker : null;
    talker.hidden = !who;
    if (!who) return;
    const text = who.home
      ? `Talking with ${who.title} · handed over by ${who.home_title}`
      : `Talking with ${who.title}`;
    setText(talker, text);
    talker.title = text;
    talker.classList.toggle("handed", Boolean(who.home));
  }

  function render() {
    const chat = chats.selected;
    setText(title, chat ? chat.name || "New chat" : "Cadre");
    project.hidden = !chat?.project;
    setText(project, chat?.project ? `Project: ${chat.project}` : "");
    renderParent(chat);
    for (const button of [rename, reset, remove]) button.disabled = !chat;
    if (chat) {
      exportLink.href = chats.exportUrl(chat.id);
      exportLink.removeAttribute("aria-disabled");
    } else {
      exportLink.removeAttribute("href");
      exportLink.setAttribute("aria-disabled", "true");
    }
  }

  /** "Branch of “Trip plans”", a link to it; its parent deleted, said so without a link. */
  function renderParent(chat) {
    const parentId = chat?.parent?.id;
    parentLink.hidden = !parentId;
    if (!parentId) return;
    const parent = chats.chats.get(parentId);
    setText(parentLink, parent ? `Branch of “${parent.name || "New chat"}”` : "Branch of a deleted chat");
    if (parent) parentLink.href = `#/chat/${encodeURIComponent(parentId)}`;
    else parentLink.removeAttribute("href");
    parentLink.title = parent ? "Open the chat this one was branched from" : "";
  }

  function guard(label, action) {
    return async () => {
      const chat = chats.selected;
      if (!chat) return;
      try {
        await action(chat);
      } catch (err) {
        notices.error(err, label);
      }
    };
  }

  rename.addEventListener("click", guard("Rename", async (chat) => {
    const name = await promptDialog("Rename chat", chat.name || "");
    if (name !== null && name.trim() && name !== chat.name) await chats.rename(chat.id, name.trim());
  }));

  reset.addEventListener("click", guard("Reset", async (chat) => {
    const ok = await confirmDialog(
      "Reset this chat?",
      `The log and the agents' memory of “${chat.name || "New chat"}” are cleared. Attachments stay.`,
      { okLabel: "Reset", danger: true },
    );
    if (ok) await chats.reset(chat.id);
  }));

  remove.addEventListener("click", guard("Delete", async (chat) => {
    const ok = await confirmDialog(
      "Delete this chat?",
      `“${chat.name || "New chat"}” and its files are deleted. This cannot be undone.`,
      { okLabel: "Delete", danger: true },
    );
    if (ok) await chats.remove(chat.id);
  }));

  chats.on("selected", render);
  chats.on("list", render);
  chats.on("selected", renderTalker);
  chats.on("state", (chatId) => {
    if (chatId === chats.selectedId) renderTalker();
  });
  render();
  renderTalker();
  mountChatModel(root, { chats, notices });
  mountChatReplay(root, { chats, notices });
}
