// Run controls (pause/resume, nudge, stop, continue) enabled from ChatState,
// and the status line: the chat's live progress, not a log entry.

import { byTestId, setText } from "../dom.js";

export function mountControls(root, { chats, logStore, notices }) {
  const buttons = {
    pause: byTestId("pause", root),
    resume: byTestId("resume", root),
    nudge: byTestId("nudge", root),
    stop: byTestId("stop", root),
    continue: byTestId("continue", root),
  };
  const status = byTestId("status-line", root);
  const statusText = status.querySelector(".status-text");

  function render() {
    const chatId = chats.selectedId;
    const state = chats.stateOf(chatId);
    const { running, paused, interrupted } = state;
    // Paused is a state of the chat, not only of a run: resume stays offered.
    buttons.pause.hidden = paused;
    buttons.resume.hidden = !paused;
    buttons.pause.disabled = !running;
    buttons.resume.disabled = !chatId;
    buttons.nudge.disabled = !running;
    buttons.stop.disabled = !running;
    buttons.continue.hidden = !(interrupted && !running);

    let text = "";
    if (running) {
      const progress = state.progress || logStore.get(chatId)?.progress?.heading || "Working";
      text = paused ? `Paused · ${progress}` : progress;
    } else if (interrupted) {
      text = "Interrupted: the server stopped while this chat was working. Continue resumes it.";
    }
    status.dataset.state = !chatId ? "none" : running ? (paused ? "paused" : "running") : interrupted ? "interrupted" : "idle";
    setText(statusText, text);
    status.hidden = text === "";
  }

  for (const [action, button] of Object.entries(buttons)) {
    button.addEventListener("click", async () => {
      const chatId = chats.selectedId;
      if (!chatId) return;
      button.disabled = true;
      try {
        await chats.control(chatId, action);
      } catch (err) {
        notices.error(err, `${action[0].toUpperCase()}${action.slice(1)} failed`);
      } finally {
        render();
      }
    });
  }

  chats.on("selected", render);
  chats.on("state", (chatId) => {
    if (chatId === chats.selectedId) render();
  });
  logStore.on("change", ({ chatId }) => {
    if (chatId === chats.selectedId && !chats.stateOf(chatId).progress) render();
  });
  render();
}
