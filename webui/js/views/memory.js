// The memory panel: an area's memories, newest first or by search; each can be
// edited in place or deleted (after a "Delete this memory? Yes / No" in its row).
// Each says where it came from: the chat by its name, never its id.

import { byTestId, h } from "../dom.js";
import { fetchJson, postJson } from "../http.js";

/** Where a memory came from, in words: a chat by its name ("chat <id>" on the server). */
function sourceText(source, chats) {
  const chatId = /^chat (\S+)$/.exec(source || "")?.[1];
  if (!chatId) return source || "";
  const chat = chats.chats.get(chatId);
  if (!chat) return "from a chat since deleted";
  return `from the chat “${chat.name || "New chat"}”`;
}

export function mountMemory({ notices, chats }) {
  const dialog = byTestId("memory");
  const list = byTestId("memory-list");
  const empty = byTestId("memory-empty");
  const query = byTestId("memory-query");
  const areaSelect = byTestId("memory-area");
  let timer = null;
  let asked = 0; // the latest listing asked for: an older answer arriving late is dropped

  function params() {
    const p = new URLSearchParams();
    if (query.value.trim()) p.set("q", query.value.trim());
    if (areaSelect.value) p.set("area", areaSelect.value);
    return p.toString();
  }

  async function load() {
    const mine = ++asked;
    try {
      const data = await fetchJson(`/api/memory?${params()}`);
      if (mine !== asked) return;
      // Each area once; the chats' default one is there even before its first memory.
      const names = [...new Set([...data.areas, data.default_area, data.area])].sort();
      areaSelect.replaceChildren(...names.map((a) =>
        h("option", { value: a }, a === data.default_area && a !== "default" ? `${a} (default)` : a)));
      areaSelect.value = data.area;
      render(data.memories);
    } catch (err) {
      notices.error(err, "Memory");
    }
  }

  function render(memories) {
    showEmpty(memories.length === 0);
    list.replaceChildren(...memories.map(item));
  }

  function showEmpty(shown) {
    empty.textContent = query.value.trim() ? "No memories match your search." : "No memories here yet.";
    empty.hidden = !shown;
  }

  /** Delete asks first, in the row: focus goes to No (the safe answer); Escape is No too. */
  function confirmDelete(actions, remove, onYes) {
    const yes = h("button", { type: "button", class: "btn small danger", testid: "memory-delete-yes" }, "Yes, delete");
    const no = h("button", { type: "button", class: "btn small", testid: "memory-delete-no" }, "No");
    const box = h("div", { class: "memory-confirm", role: "group", "aria-label": "Confirm delete",
      testid: "memory-delete-confirm" }, h("span", { class: "memory-confirm-text" }, "Delete this memory?"), yes, no);
    const close = () => {
      box.remove();
      actions.hidden = false;
      remove.focus();
    };
    no.addEventListener("click", close);
    yes.addEventListener("click", () => onYes(close));
    box.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      event.preventDefault(); // not the dialog's Escape: only the question closes
      event.stopPropagation();
      close();
    });
    actions.hidden = true;
    actions.after(box);
    no.focus();
  }

  function item(memory) {
    const text = h("textarea", { class: "input", testid: "memory-text", "aria-label": "Memory text" });
    text.value = memory.text;
    const when = new Date(memory.created_at * 1000).toLocaleString();
    const meta = [memory.kind, sourceText(memory.source, chats), memory.tags.join(", "), when]
      .filter(Boolean).join(" · ");
    const save = h("button", { type: "button", class: "btn small", testid: "memory-save" }, "Save");
    const remove = h("button", { type: "button", class: "btn small danger", testid: "memory-delete" }, "Delete");
    const actions = h("div", { class: "memory-actions" }, save, remove);
    const row = h("li", { class: "memory-item", testid: "memory-item", data: { memoryId: memory.id } },
      h("span", { class: "memory-meta" }, meta), text, actions);
    save.addEventListener("click", async () => {
      try {
        await postJson(`/api/memory/${encodeURIComponent(memory.id)}?${params()}`, { text: text.value });
        notices.push({ title: "Memory saved", message: "", type: "success" });
      } catch (err) {
        notices.error(err, "Memory");
      }
    });
    remove.addEventListener("click", () => confirmDelete(actions, remove, async (close) => {
      try {
        await postJson(`/api/memory/delete?${params()}`, { ids: [memory.id] });
        row.remove();
        showEmpty(list.children.length === 0);
        query.focus();
      } catch (err) {
        close();
        notices.error(err, "Memory");
      }
    }));
    return row;
  }

  byTestId("memory-open").addEventListener("click", () => {
    dialog.showModal();
    load();
  });
  byTestId("memory-close").addEventListener("click", () => dialog.close());
  query.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(load, 250);
  });
  areaSelect.addEventListener("change", load);
}
