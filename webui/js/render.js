// Turning model text into DOM. Markdown goes marked → DOMPurify → highlight.js;
// everything else is plain text through textContent. Model text never reaches
// innerHTML unsanitized.

import DOMPurify from "../vendor/dompurify/purify.es.js";
import hljs from "../vendor/highlight/highlight.min.js";
import { Marked } from "../vendor/marked/marked.esm.js";
import { copyButton } from "./copy.js";

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    // The language goes in data-lang: the sanitizer drops every class attribute.
    code({ text, lang }) {
      const language = (lang || "").match(/^\S*/)[0];
      const body = escapeHtml(text.replace(/\n$/, ""));
      return `<pre><code data-lang="${escapeHtml(language)}">${body}\n</code></pre>\n`;
    },
  },
});

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Set once (parsing a config on every call is most of a small sanitize's cost).
DOMPurify.setConfig({
  RETURN_DOM_FRAGMENT: true,
  // Model output may carry HTML: no forms, no styles, nothing that acts.
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option"],
  FORBID_ATTR: ["style", "class", "id"],
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  // A model's image could tell another site (or probe this one) that the page
  // was read: only inline data images load; the rest shows its alt text.
  if (node.tagName === "IMG" && !/^data:image\//.test(node.getAttribute("src") || "")) {
    node.removeAttribute("src");
    node.removeAttribute("srcset");
  }
});

/** The sanitized DOM of markdown `text`, with highlighted code blocks. */
export function markdownFragment(text) {
  const html = marked.parse(text || "");
  const fragment = DOMPurify.sanitize(html);
  for (const code of fragment.querySelectorAll("pre > code")) {
    highlight(code);
    addCopyButton(code.parentElement);
  }
  return fragment;
}

/** Wrap a code block with a button that copies its code (added after sanitizing). */
function addCopyButton(pre) {
  const block = document.createElement("div");
  block.className = "code-block";
  pre.replaceWith(block);
  block.append(copyButton("Copy code", { testid: "copy-code" }), pre);
}

/**
 * Rendered markdown of finished texts, by text: opening a chat again (or
 * another window of it) clones these instead of parsing everything anew.
 */
const rendered = new Map();
const CACHE_ENTRIES = 600;
const CACHE_MAX_TEXT = 50000;

function cachedFragment(text) {
  let fragment = rendered.get(text);
  if (fragment) {
    rendered.delete(text); // most recently used goes last
  } else {
    fragment = markdownFragment(text);
    if (rendered.size >= CACHE_ENTRIES) rendered.delete(rendered.keys().next().value);
  }
  rendered.set(text, fragment);
  return fragment.cloneNode(true);
}

/**
 * Replace `el`'s children by the rendered markdown of `text`. `cache`: the
 * text is likely to be rendered again (not a stream's partial text).
 */
export function renderMarkdown(el, text, { cache = false } = {}) {
  const value = text || "";
  const useCache = cache && value.length <= CACHE_MAX_TEXT;
  el.replaceChildren(useCache ? cachedFragment(value) : markdownFragment(value));
}

/** Longer code is shown plain: highlighting runs again on every streamed chunk. */
const MAX_HIGHLIGHT = 20000;
/** Guessing the language tries every grammar: only for short blocks. */
const MAX_AUTO = 3000;

function highlight(code) {
  const text = code.textContent;
  const lang = code.dataset.lang;
  const known = lang && hljs.getLanguage(lang);
  if (text.length > (known ? MAX_HIGHLIGHT : MAX_AUTO)) return;
  const result = known
    ? hljs.highlight(text, { language: lang, ignoreIllegals: true })
    : hljs.highlightAuto(text);
  // hljs escapes the code it returns: its HTML holds only <span class="hljs-…">.
  code.innerHTML = result.value;
  code.classList.add("hljs");
}

/** Set `el`'s text (no HTML interpretation at all). */
export function renderText(el, text) {
  const value = text ?? "";
  if (el.textContent !== value) el.textContent = value;
}

/** A value of a kvps table as text: strings as they are, the rest as JSON. */
export function valueText(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}
