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

/** What stands for a block of code left out. */
const CODE = "(code left out)";
/** A fence's opening or closing line: ``` or ~~~ (three or more), up to three spaces in. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A thematic break: ---, *** or ___ (spaces between allowed). */
const RULE = /^ {0,3}([-*_])( *\1){2,} *$/;
/** A table's row (| a | b |) and the row under its header (|---|:--:|). */
const TABLE_ROW = /^ *\|.*\| *$/;
const TABLE_RULE = /^ *\|?( *:?-+:? *\|)+( *:?-+:? *)?\|? *$/;
const LIST_ITEM = /^ {0,3}([-*+]|\d+[.)]) +/;

/** An answer's markdown as words to say: code blocks (fenced or indented), tables' rules,
 * thematic breaks, HTML tags, links' addresses and emphasis marks left out; a table's cells
 * read as a list; underscores inside names (max_tokens) kept. */
export function speakable(markdown) {
  const out = [];
  let fence = null; // the opening fence while inside a fenced block
  let indented = false; // inside an indented code block
  let lastText = ""; // the last line that was not blank (an indented line after a list item
  // continues the item)
  let blankBefore = true;
  for (const line of String(markdown || "").replace(/\r\n?/g, "\n").split("\n")) {
    const marker = line.match(FENCE)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length
        && !line.trim().slice(marker.length).trim()) fence = null;
      continue;
    }
    if (marker) {
      fence = marker;
      out.push(CODE);
      continue;
    }
    const blank = !line.trim();
    if (!blank && /^( {4}|\t)/.test(line)
      && (indented || (blankBefore && !LIST_ITEM.test(lastText)))) {
      if (!indented) out.push(CODE);
      indented = true;
      continue;
    }
    if (!blank) indented = false;
    blankBefore = blank;
    if (blank) {
      out.push("");
      continue;
    }
    lastText = line;
    if (RULE.test(line) || TABLE_RULE.test(line)) {
      out.push("");
      continue;
    }
    out.push(TABLE_ROW.test(line)
      ? line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim()).filter(Boolean)
        .join(", ")
      : line);
  }
  return out.join("\n")
    .replace(/`([^`\n]*)`/g, "$1")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<\/?[A-Za-z][^<>]*>/g, "")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, "")
    .replace(/\*+|~~/g, "")
    .replace(/(^|\W)_+(?=\S)/g, "$1")
    .replace(/(\S)_+(?=\W|$)/g, "$1")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
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
