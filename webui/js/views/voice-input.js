// The composer's microphone: press Speak to record (a level meter and the time show it
// listens), press it again (or Enter/Space on the button) to end; Escape drops the
// recording, and so does opening another chat (a recording belongs to the chat it was made
// in: its text never lands in another). The button keeps its one name; aria-pressed says
// it records. While the microphone is being asked for, further presses are ignored (a
// second recording would leave a microphone on); a stream that comes after a cancel is
// stopped at once. Every way out stops the microphone's tracks (the browser's microphone
// light goes off), and a recorder that cannot start or fails is told in plain words.
// The recording goes to the server's speech-to-text model (stores/voice.js) and its text
// lands in the message box to check, or is sent at once when the setting says so. The
// browser asks for the microphone only when Speak is pressed. Shown when the server has a
// speech-to-text model (Settings, Voice). For the built-in model (the offer's format "wav")
// the page records 16 kHz WAV itself (../wav-recorder.js) instead of the browser's Opus.

import { byTestId, setText } from "../dom.js";
import { canRecordWav, WavRecorder } from "../wav-recorder.js";

/** The longest recording, in seconds: it stops by itself then. */
const MAX_SECONDS = 600;
/** Preferred formats, the first the browser records in is used. */
const FORMATS = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/mp4", "audio/webm"];

/** What a failure to get the microphone is told, by the browser's error name. */
const REFUSALS = {
  NotAllowedError: "The microphone was refused. Allow it for this page in the browser's site "
    + "settings (the icon left of the address), then press Speak again.",
  SecurityError: "The browser does not let this page use the microphone. Allow it in the "
    + "browser's site settings, then press Speak again.",
  NotFoundError: "No microphone was found. Connect one (or check the system's sound settings), "
    + "then press Speak again.",
  NotReadableError: "The microphone could not be started: another program may be using it. "
    + "Close that program, then press Speak again.",
};
const NO_RECORDER = "This browser could not start recording from the microphone. Try another "
  + "browser (Chromium, Firefox, Safari), or type your message.";
const RECORDER_FAILED = "The recording stopped: the browser reported an error while recording. "
  + "Press Speak to record again.";
const NO_RECORDING = "This browser cannot record sound on this page: recording needs a secure "
  + "address (https, or localhost). Open Cadre that way, or type your message.";

/** "0:07" */
function elapsed(seconds) {
  const whole = Math.floor(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

export function mountVoiceInput(root, { voice, notices, settings, chats }) {
  const box = byTestId("voice-box", root);
  const mic = byTestId("mic", root);
  const label = mic.querySelector(".mic-label");
  const meter = byTestId("mic-meter", root);
  const level = meter.querySelector(".mic-level");
  const time = byTestId("mic-time", root);
  const status = byTestId("mic-status", root);
  const input = byTestId("message-input", root);
  const send = byTestId("send", root);
  /** The recording going on: {recorder, stream, audio, chunks, started, timer, frame, dropped,
   * chat}. */
  let take = null;
  /** A press waiting for /api/voice and the microphone: {cancelled}; null when none is. */
  let starting = null;
  let writing = false;

  function render() {
    const recording = take !== null;
    mic.setAttribute("aria-pressed", String(recording));
    mic.classList.toggle("is-recording", recording);
    mic.disabled = writing;
    // Not `disabled` while starting: that would take the focus from the button (Escape and
    // a second Enter would go elsewhere); the click handler ignores presses meanwhile.
    mic.setAttribute("aria-disabled", String(starting !== null));
    setText(label, "Speak"); // one name: aria-pressed (and the colour, the time) say it records
    mic.title = recording ? "Recording: press again to stop and write it down (Escape drops it)"
      : writing ? "Writing down what you said…"
        : "Speak a message: press to record, press again to stop";
    meter.hidden = !recording;
    time.hidden = !recording;
  }

  function fail(message) {
    setText(status, message);
    notices.error(message, "Microphone");
  }

  /** A recorder of `stream` in the format the server reads. */
  async function recorderOf(stream) {
    if (voice.offer?.format === "wav") return WavRecorder.open(stream);
    const mimeType = FORMATS.find((type) => MediaRecorder.isTypeSupported?.(type));
    return new MediaRecorder(stream, mimeType ? { mimeType } : {});
  }

  async function start(attempt) {
    const wav = voice.offer?.format === "wav";
    if (!navigator.mediaDevices?.getUserMedia
      || (wav ? !canRecordWav() : typeof MediaRecorder === "undefined")) {
      fail(NO_RECORDING);
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      if (attempt.cancelled) return;
      fail(REFUSALS[err?.name] || `The microphone could not be started (${err?.name || err}). `
        + "Check the browser's site settings, then press Speak again.");
      return;
    }
    if (attempt.cancelled) { // dropped (another chat opened) while the browser asked
      for (const track of stream.getTracks()) track.stop();
      return;
    }
    const mine = { stream, chunks: [], started: performance.now(), dropped: false,
      chat: attempt.chat ?? chats?.selectedId ?? null };
    try {
      mine.recorder = await recorderOf(stream);
      if (attempt.cancelled) { // dropped while the recorder was being set up
        mine.recorder.close?.();
        for (const track of stream.getTracks()) track.stop();
        return;
      }
      mine.recorder.addEventListener("dataavailable", (event) => {
        if (event.data?.size) mine.chunks.push(event.data);
      });
      mine.recorder.addEventListener("stop", () => finish(mine));
      mine.recorder.addEventListener("error", (event) => {
        console.warn("recording failed", event.error || event);
        mine.failed = true;
        stop(true);
      });
      mine.recorder.start(250);
      take = mine;
      watchLevel(mine);
    } catch (err) {
      console.warn("the recorder could not start", err);
      mine.finished = true; // nothing it recorded is sent
      try {
        if (mine.recorder && mine.recorder.state !== "inactive") mine.recorder.stop();
      } catch { /* it never started */ }
      release(mine);
      fail(NO_RECORDER);
      return;
    }
    voice.emit("recording"); // anything read aloud stops (views/voice-output.js)
    mine.timer = setInterval(() => tick(mine), 250);
    tick(mine);
    setText(status, "Recording. Press Speak again when you are done.");
    render();
  }

  /** The meter: how loud the microphone is now, from an analyser of its stream. */
  function watchLevel(mine) {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return;
    try {
      mine.audio = new Context();
    } catch (err) {
      console.warn("no level meter", err); // records without one
      return;
    }
    const analyser = mine.audio.createAnalyser();
    analyser.fftSize = 512;
    mine.audio.createMediaStreamSource(mine.stream).connect(analyser);
    const samples = new Uint8Array(analyser.fftSize);
    const draw = () => {
      analyser.getByteTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += ((s - 128) / 128) ** 2;
      const loudness = Math.min(1, Math.sqrt(sum / samples.length) * 4);
      level.style.transform = `scaleX(${loudness.toFixed(3)})`;
      meter.dataset.level = loudness.toFixed(2);
      mine.frame = requestAnimationFrame(draw);
    };
    draw();
  }

  function tick(mine) {
    const seconds = (performance.now() - mine.started) / 1000;
    setText(time, elapsed(seconds));
    if (seconds >= MAX_SECONDS) stop();
  }

  function stop(drop = false) {
    if (!take) return;
    const mine = take;
    mine.dropped = drop;
    try {
      if (mine.recorder.state !== "inactive") {
        mine.recorder.stop();
        if (drop) release(mine); // the microphone off now, not when the recorder's stop comes
        return;
      }
    } catch (err) {
      console.warn("the recorder would not stop", err);
    }
    finish(mine);
  }

  function release(mine) {
    if (mine.released) return;
    mine.released = true;
    clearInterval(mine.timer);
    cancelAnimationFrame(mine.frame);
    mine.audio?.close().catch(() => {});
    for (const track of mine.stream.getTracks()) track.stop(); // the browser's mic light goes off
    if (take === mine) take = null;
    render();
  }

  async function finish(mine) {
    if (mine.finished) return;
    mine.finished = true;
    release(mine);
    if (mine.failed) {
      fail(RECORDER_FAILED);
      return;
    }
    if (mine.dropped) {
      setText(status, mine.left ? "Recording dropped: another chat was opened."
        : "Recording dropped.");
      render();
      return;
    }
    const blob = new Blob(mine.chunks, { type: mine.recorder.mimeType || "audio/webm" });
    if (!blob.size) {
      fail("Nothing was recorded. Check that the microphone is on, then press Speak again.");
      render();
      return;
    }
    writing = true;
    setText(status, "Writing down what you said…");
    render();
    try {
      const text = (await voice.transcribe(blob)).trim();
      if (switched(mine, chats?.selectedId ?? null)) {
        // Another chat was opened while it was written down: not put (nor sent) there.
        const message = "What you said was recorded in another chat, so it was not put in "
          + `this one. It was: ${text}`;
        notices.push({ title: "Microphone", type: "info", message });
        return;
      }
      if (!text) {
        fail("No words were heard in the recording. Speak a little closer, then try again.");
        return;
      }
      put(text);
    } catch (err) {
      fail(err.message || String(err));
    } finally {
      writing = false;
      render();
    }
  }

  /** The text into the message box (after what it holds); sent at once if the setting says so. */
  function put(text) {
    const before = input.value.trimEnd();
    input.value = before ? `${before} ${text}` : text;
    input.dispatchEvent(new Event("input", { bubbles: true })); // the composer sizes the box
    input.focus();
    if (voice.offer?.send_at_once && !send.disabled) {
      setText(status, "Sent what you said.");
      send.click();
    } else {
      setText(status, "What you said is in the message box: check it, then send.");
    }
  }

  mic.addEventListener("click", async () => {
    if (take) {
      stop();
      return;
    }
    if (starting || writing) return; // a second press while the first is on its way
    const attempt = { cancelled: false, chat: chats?.selectedId ?? null };
    starting = attempt;
    render();
    try {
      await voice.load(); // the settings may have changed since the page opened
      if (attempt.cancelled) return;
      if (!voice.offer.transcribe) {
        box.hidden = true;
        fail("No speech-to-text model is set any more. An admin sets one in Settings, Voice.");
        return;
      }
      await start(attempt);
    } catch (err) {
      if (!attempt.cancelled) fail(err.message || String(err));
    } finally {
      if (starting === attempt) starting = null;
      render();
    }
  });
  function cancelStarting() {
    if (!starting) return;
    starting.cancelled = true;
    starting = null;
    render();
  }
  // Another chat opened: a recording (or a press still starting one) is dropped there. One
  // begun with no chat open (the page still choosing one, or a new chat about to be made)
  // belongs to the chat that opens next: that is no switch.
  function switched(held, chatId) {
    return held.chat !== null && held.chat !== chatId;
  }
  chats?.on("selected", (chatId) => {
    for (const held of [starting, take]) if (held && held.chat === null) held.chat = chatId;
    if (starting && switched(starting, chatId)) cancelStarting();
    if (take && switched(take, chatId)) {
      take.left = true;
      stop(true);
    }
  });
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && (take || starting)) {
      event.preventDefault();
      cancelStarting();
      stop(true);
    }
  });
  voice.on("offer", (offer) => {
    box.hidden = !offer.transcribe;
  });
  // A change of the voice settings shows (or hides) the button without a reload.
  let seen = "";
  settings?.on("change", () => {
    const v = settings.values;
    if (!v) return;
    const key = [v.stt_model, v.tts_model, v.voice_send_at_once, v.voice_read_aloud].join("|");
    if (seen && key !== seen) voice.load().catch(() => {});
    seen = key;
  });
  render();
}
