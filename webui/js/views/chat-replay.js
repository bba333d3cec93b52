// "Replay…" in the chat header: the selected chat replayed into a new chat (the server's
// store/replaying.py), with the two choices in plain words: whether the tools run again or
// give their recorded results, and whether the replay stops at the first difference or
// goes on with the model. The new chat opens at once; its log shows the replay as it goes.

import { byTestId } from "../dom.js";
import { postJson } from "../http.js";

export function mountChatReplay(root, { chats, notices }) {
  const button = byTestId("chat-replay", root);
  const dialog = byTestId("replay-dialog");
  if (!button || !dialog) return;
  const form = dialog.querySelector("form");
  const error = byTestId("replay-error", dialog);
  const start = byTestId("replay-start", dialog);

  function say(text) {
    error.textContent = text;
    error.hidden = !text;
  }

  function chosen(name) {
    return form.querySelector(`input[name="${name}"]:checked`).value;
  }

  function render() {
    button.disabled = !chats.selected;
  }

  button.addEventListener("click", () => {
    if (!chats.selected) return;
    say("");
    dialog.showModal();
    start.focus();
  });

  byTestId("replay-cancel", dialog).addEventListener("click", () => dialog.close("cancel"));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chat = chats.selected;
    if (!chat) return;
    start.disabled = true;
    say("");
    try {
      const body = { tools: chosen("replay-tools"), on_difference: chosen("replay-on-difference") };
      const answer = await postJson(`/api/chats/${encodeURIComponent(chat.id)}/replay`, body);
      dialog.close("ok");
      await chats.select(answer.context_id);
    } catch (err) {
      say(err.message); // the server's words: working, nothing to replay, ...
      if (!dialog.open) notices.error(err, "Replay");
    } finally {
      start.disabled = false;
    }
  });

  chats.on("selected", render);
  chats.on("list", render);
  render();
}
