// The chat list's project choice: every chat, chats of no project, or one project's.
// Shown once there is a project; "New chat" then says where the chat goes.

import { byTestId, h, setText } from "../dom.js";
import { NONE } from "../stores/projects.js";

export function mountProjectFilter(root, { projects, notices }, changed) {
  const box = byTestId("chat-project-box", root);
  const select = byTestId("chat-project-filter", root);
  const newChat = byTestId("new-chat", root);

  function render() {
    const names = projects.names();
    box.hidden = names.length === 0 && !projects.shown;
    select.replaceChildren(
      h("option", { value: "" }, "All chats"),
      h("option", { value: NONE }, "No project"),
      ...names.map((name) => h("option", { value: name }, name)),
    );
    select.value = projects.shown;
    const target = projects.forNewChat;
    setText(newChat, target ? `New chat in ${target}` : "New chat");
    newChat.title = target ? `Start a chat in project ${target}` : "";
  }

  select.addEventListener("change", () => projects.show(select.value));
  projects.on("list", render);
  projects.on("shown", () => {
    render();
    changed();
  });
  projects.load().catch((err) => notices.error(err, "Projects"));
  render();
}
