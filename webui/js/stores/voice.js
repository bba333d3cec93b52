// The page's voice: what the server offers (GET /api/voice), a recording to text, a text
// to speech (server/routes/voice.py). No DOM here: views/voice-input.js records,
// views/voice-output.js plays.

import { Emitter } from "../emitter.js";
import { csrfToken, fetchJson, HttpError } from "../http.js";

export class VoiceStore extends Emitter {
  constructor() {
    super();
    /** {transcribe, speech, send_at_once, read_aloud, max_bytes, max_chars}; null until asked. */
    this.offer = null;
  }

  /** What the server offers; asked again each time (an admin may change the settings). */
  async load() {
    this.offer = await fetchJson("/api/voice");
    this.emit("offer", this.offer);
    return this.offer;
  }

  /** The text of a recording (a Blob from MediaRecorder). */
  async transcribe(blob) {
    const body = new FormData();
    const ext = (blob.type.split(";")[0].split("/")[1] || "webm").replace("x-", "");
    body.append("audio", blob, `speech.${ext}`);
    const answer = await fetchJson("/api/voice/transcribe", { method: "POST", body });
    return answer.text || "";
  }

  /** The provider's audio of `text` (a Blob). */
  async speech(text) {
    let response;
    try {
      response = await fetch("/api/voice/speech", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": await csrfToken() },
        body: JSON.stringify({ text }),
      });
    } catch (err) {
      throw new HttpError(0, `cannot reach the server (${err.message})`);
    }
    if (!response.ok) {
      const data = await response.json().catch(() => null);
      throw new HttpError(response.status, data?.error || `${response.status} ${response.statusText}`);
    }
    return response.blob();
  }
}

/** An answer's markdown as words to say: code blocks, links' addresses and marks left out. */
export function speakable(markdown) {
  return String(markdown || "")
    .replace(/```[\s\S]*?(```|$)/g, " (code left out) ")
    .replace(/`([^`]*)`/g, "$1")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+\.)\s+/gm, "")
    .replace(/[*_~|]+/g, "")
    .replace(/\s+\n/g, "\n")
    .trim();
}

/** `text` in parts of at most `max` characters, cut at sentence ends where possible. */
export function inParts(text, max) {
  const parts = [];
  let rest = text;
  while (rest.length > max) {
    const slice = rest.slice(0, max);
    const end = Math.max(slice.lastIndexOf(". "), slice.lastIndexOf("\n"), slice.lastIndexOf(" "));
    const cut = end > max / 2 ? end + 1 : max;
    parts.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut);
  }
  if (rest.trim()) parts.push(rest.trim());
  return parts;
}
