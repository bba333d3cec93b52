// Answers read aloud: a Listen button on each answer (log-item.js builds it with
// `speakButton`), and, when the "Read answers aloud" setting is on, each answer of Agent 0
// read as its run ends. Through the server's text-to-speech model (/api/voice/speech,
// played by one <audio> element of the page) or, without one, the browser's own voice
// (speechSynthesis). One thing is read at a time; a button pressed again stops it, and so
// do opening another chat and starting a recording. The button keeps its one name
// ("Listen to this answer"); aria-pressed says it is reading.

import { h } from "../dom.js";
import { inParts, speakable } from "../stores/voice.js";

/** The most characters the browser's own voice is given at once (long ones stop early). */
const BROWSER_PART = 800;

/** A Listen button for an answer; `getText()` gives its markdown. */
export function speakButton(getText) {
  const button = h("button", {
    type: "button", class: "copy-btn speak-btn", testid: "speak-answer",
    "aria-label": "Listen to this answer", title: "Read this answer aloud",
    "aria-pressed": "false",
  }, "Listen");
  button.addEventListener("click", () => button.dispatchEvent(new CustomEvent("cadre:speak", {
    bubbles: true, detail: { text: getText(), button },
  })));
  return button;
}

export function mountVoiceOutput(root, { voice, chats, logStore, notices }) {
  const audio = h("audio", { class: "visually-hidden", testid: "answer-audio", preload: "none" });
  document.body.append(audio);
  /** What is being read: {button, stopped}; null when nothing is. */
  let reading = null;

  function mark(button, on) {
    if (!button) return;
    button.setAttribute("aria-pressed", String(on));
    button.title = on ? "Reading aloud: press again to stop" : "Read this answer aloud";
  }

  function stop() {
    if (!reading) return;
    reading.stopped = true;
    audio.pause();
    window.speechSynthesis?.cancel();
    mark(reading.button, false);
    reading = null;
  }

  /** Play one blob of audio to its end (or until stopped). */
  function playBlob(blob, run) {
    return new Promise((resolve, reject) => {
      const url = URL.createObjectURL(blob);
      const done = () => {
        audio.removeEventListener("ended", done);
        audio.removeEventListener("pause", done);
        URL.revokeObjectURL(url);
        resolve();
      };
      audio.addEventListener("ended", done);
      audio.addEventListener("pause", done);
      audio.src = url;
      audio.play().catch((err) => {
        URL.revokeObjectURL(url);
        reject(new Error(run.stopped ? "" : `The browser would not play the audio (${err.name}).`
          + " Press Listen again."));
      });
    });
  }

  /** Say one part with the browser's own voice. */
  function sayPart(text) {
    return new Promise((resolve, reject) => {
      const said = new SpeechSynthesisUtterance(text);
      said.onend = resolve;
      said.onerror = (event) => (event.error === "interrupted" || event.error === "canceled"
        ? resolve() : reject(new Error(`The browser could not read aloud (${event.error}).`)));
      window.speechSynthesis.speak(said);
    });
  }

  async function read(text, button) {
    const again = reading?.button === button && button;
    stop();
    if (again) return; // the same button again: it was a Stop
    const words = speakable(text);
    if (!words) return;
    const run = { button, stopped: false };
    reading = run;
    mark(button, true);
    try {
      const offer = voice.offer || (await voice.load());
      if (offer.speech) {
        for (const part of inParts(words, offer.max_chars)) {
          const blob = await voice.speech(part);
          if (run.stopped) return;
          await playBlob(blob, run);
          if (run.stopped) return;
        }
      } else if (window.speechSynthesis && window.SpeechSynthesisUtterance) {
        for (const part of inParts(words, BROWSER_PART)) {
          if (run.stopped) return;
          await sayPart(part);
        }
      } else {
        throw new Error("This browser cannot read aloud, and no text-to-speech model is set "
          + "(an admin sets one in Settings, Voice).");
      }
    } catch (err) {
      if (!run.stopped && err.message) notices.error(err.message, "Reading aloud");
    } finally {
      if (reading === run) {
        mark(button, false);
        reading = null;
      }
    }
  }

  root.addEventListener("cadre:speak", (event) => read(event.detail.text, event.detail.button));

  // Read answers aloud: Agent 0's last answer, once its run ended while the page watched.
  // A run the page saw start (its state said running) counts, and so does one this page
  // sent a message to: a quick run may start and end between two pushes of the state, so
  // the page never sees it running; its answer is newer than the one there when it sent.
  const running = new Map();
  const read_ = new Set();
  /** chat id → the number of Agent 0's last answer when this page sent it a message. */
  const asked = new Map();
  const lastAnswer = (chatId) => [...logStore.get(chatId).items].reverse()
    .find((i) => i?.type === "response" && i.agentno === 0);

  function readLast(chatId) {
    const answer = lastAnswer(chatId);
    const key = answer && `${chatId}:${answer.no}`;
    if (!answer || read_.has(key)) return;
    read_.add(key);
    const button = root.querySelector(
      `[data-testid="log-item"][data-no="${answer.no}"] [data-testid="speak-answer"]`,
    );
    read(answer.content, button);
  }

  /** The answer to this page's message, once it came and the run is over. */
  function answeredNow(chatId) {
    if (!asked.has(chatId) || chats.stateOf(chatId).running) return;
    const answer = lastAnswer(chatId);
    if (!answer || answer.no <= asked.get(chatId)) return;
    asked.delete(chatId);
    if (chatId === chats.selectedId && voice.offer?.read_aloud) readLast(chatId);
  }

  chats.on("sending", ({ chatId }) => asked.set(chatId, lastAnswer(chatId)?.no ?? -1));
  // A message that did not go, or a chat left before its answer came (opened later, its
  // answer is old news): nothing to read for it.
  chats.on("send-failed", ({ chatId }) => asked.delete(chatId));
  chats.on("selected", (chatId) => {
    for (const other of [...asked.keys()]) if (other !== chatId) asked.delete(other);
  });
  logStore.on("change", ({ chatId }) => setTimeout(() => answeredNow(chatId), 0));
  chats.on("state", (chatId) => {
    const now = Boolean(chats.stateOf(chatId).running);
    const was = running.get(chatId);
    running.set(chatId, now);
    setTimeout(() => answeredNow(chatId), 0);
    if (!(was && !now) || chatId !== chats.selectedId || !voice.offer?.read_aloud) return;
    setTimeout(() => readLast(chatId), 0);
  });
  chats.on("selected", stop);
  voice.on("recording", stop); // the microphone would hear it (views/voice-input.js)
}
