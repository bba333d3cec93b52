// Small DOM helpers. Text always goes in through textContent, never innerHTML.

/**
 * Create an element: h("button", {class: "btn", testid: "send", onclick: fn}, "Send").
 * Keys: class, testid (data-testid), data (object of data-*), on<event> (listener),
 * anything else becomes an attribute (true → empty attribute, false/null → left out).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (key === "class") el.className = value;
    else if (key === "testid") el.dataset.testid = value;
    else if (key === "data") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** The element with data-testid `id` inside `root` (the document by default). */
export function byTestId(id, root = document) {
  return root.querySelector(`[data-testid="${id}"]`);
}

/** A server's "the current password is wrong: type it again" as a sentence: capital, full stop. */
export function sentence(text) {
  const words = String(text || "").trim();
  if (!words) return "";
  const capital = words[0].toUpperCase() + words.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** Say `text` in `box` (an error line next to what failed), or hide the box for "". */
export function say(box, text) {
  box.textContent = sentence(text);
  box.hidden = !text;
}

/** Names in words: "A1.1, A1.2 and A1.3". */
export function andList(names) {
  if (names.length < 2) return names[0] ?? "";
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

/** Set textContent only when it differs (keeps selections and avoids layout work). */
export function setText(el, text) {
  const value = text ?? "";
  if (el.textContent !== value) el.textContent = value;
}

/** Run `fn` once before the next paint; calls in between are merged. */
export function frameScheduler(fn) {
  let pending = false;
  const run = () => {
    pending = false;
    fn();
  };
  return () => {
    if (pending) return;
    pending = true;
    // A hidden tab gets no animation frames; a timer keeps the log current there.
    if (document.hidden) setTimeout(run, 50);
    else requestAnimationFrame(run);
  };
}

/** "12.3k" for token counts. */
export function compactNumber(n) {
  if (n === null || n === undefined) return "";
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

// Formatters are made once: toLocaleString with options builds one per call (slow).
const CLOCK = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
const FULL_DATE = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** "14:03" for a Unix time in seconds; the full date goes in a title. */
export function clock(seconds) {
  return seconds ? CLOCK.format(seconds * 1000) : "";
}

export function fullDate(seconds) {
  return seconds ? FULL_DATE.format(seconds * 1000) : "";
}
