// A fallback model in use (models/fallback.py): the chat's model failed in a way retrying
// will not fix and is passed over for its cool-down. The chat header says so, and the
// status line while the chat works; ChatState's `fallback` says it (null: the chat's own
// model answers). A step that moved says it on its own row (log-fallback.js).

import { h, setText } from "../dom.js";

/** "Fallback: openai/backup answers instead of openai/main", with why in the tooltip. */
function words(fallback) {
  return `Fallback: ${fallback.instead} answers instead of ${fallback.model}`;
}

export function mountFallbackStatus(root, { chats }) {
  const header = root.querySelector(".chat-header");
  const actions = header.querySelector(".chat-actions");
  // Made here, not in index.html: the header's other parts stay as they are.
  const badge = h("p", { class: "chat-fallback", testid: "chat-fallback", hidden: true });
  header.insertBefore(badge, actions);
  const status = root.querySelector('[data-testid="status-line"]');
  const line = h("span", { class: "status-fallback", testid: "status-fallback", hidden: true });
  status.append(line);

  function render() {
    const fallback = chats.selectedId ? chats.selectedState.fallback : null;
    badge.hidden = !fallback;
    line.hidden = !fallback;
    if (!fallback) return;
    const text = words(fallback);
    const why = `${fallback.model}: ${fallback.reason} Tried first again in about ${Math.max(1, Math.round(fallback.left / 60))} min.`;
    setText(badge, text);
    badge.title = why;
    setText(line, `· ${text}`);
    line.title = why;
  }

  chats.on("selected", render);
  chats.on("state", (chatId) => {
    if (chatId === chats.selectedId) render();
  });
  render();
}
