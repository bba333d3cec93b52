// Run controls (pause/resume, nudge, stop, continue) enabled from ChatState,
// and the status line: the chat's live progress, not a log entry, with how long its
// step has gone on.

import { byTestId, setText } from "../dom.js";
import { plainHeading } from "../tool-titles.js";

/** Seconds a step shows before the status line says how long it has taken. */
const SHOW_AFTER_S = 2;

/** A call's words before its first reply text (core/reply/call_progress.py), and what a person
 * may want to know when it lasts: a model on this computer's processor reads a long
 * prompt for a minute before its first words. */
const READING = "Reading the prompt…";
const READING_HINT_S = 15;
const READING_HINT = ": the model reads the whole prompt before it writes";

/** "12 s", "1 min 5 s". */
function duration(seconds) {
  if (seconds < 60) return `${seconds} s`;
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

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
  // Kept out of the live region: a screen reader would read the line every second.
  const statusTime = status.querySelector(".status-time");
  // How long the step the line tells has gone on: a local model reads a long prompt for
  // a minute before its first words, and a line that never changes looks stuck.
  let step = { text: "", since: 0 };
  let ticker = null;

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
    let took = "";
    if (running) {
      const heading = state.progress || logStore.get(chatId)?.progress?.heading || "Working";
      const progress = heading.split(" · ").map(plainHeading).join(" · ");
      if (step.text !== `${chatId} ${progress}`) step = { text: `${chatId} ${progress}`, since: Date.now() };
      const seconds = Math.floor((Date.now() - step.since) / 1000);
      if (seconds >= SHOW_AFTER_S && !paused) {
        took = `· ${duration(seconds)}`;
        if (seconds >= READING_HINT_S && progress.endsWith(READING)) took += READING_HINT;
      }
      text = paused ? `Paused · ${progress}` : progress;
    } else if (interrupted) {
      text = "Interrupted: the server stopped while this chat was working. Continue resumes it.";
    }
    status.dataset.state = !chatId ? "none" : running ? (paused ? "paused" : "running") : interrupted ? "interrupted" : "idle";
    setText(statusText, text);
    setText(statusTime, took);
    status.hidden = text === "";
    if (running && !paused && !ticker) ticker = setInterval(render, 1000);
    if (!(running && !paused) && ticker) {
      clearInterval(ticker);
      ticker = null;
    }
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
