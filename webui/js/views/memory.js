// The memory panel: an area's memories, newest first or by search; each can be
// edited in place or deleted.

import { byTestId, h } from "../dom.js";
import { fetchJson, postJson } from "../http.js";

export function mountMemory({ notices }) {
  const dialog = byTestId("memory");
  const list = byTestId("memory-list");
  const empty = byTestId("memory-empty");
  const query = byTestId("memory-query");
  const areaSelect = byTestId("memory-area");
  let timer = null;

  function params() {
    const p = new URLSearchParams();
    if (query.value.trim()) p.set("q", query.value.trim());
    if (areaSelect.value) p.set("area", areaSelect.value);
    return p.toString();
  }

  async function load() {
    try {
      const data = await fetchJson(`/api/memory?${params()}`);
      const chosen = areaSelect.value;
      areaSelect.replaceChildren(h("option", { value: "" }, "default area"),
        ...data.areas.map((a) => h("option", { value: a }, a)));
      areaSelect.value = chosen;
      render(data.memories);
    } catch (err) {
      notices.error(err, "Memory");
    }
  }

  function render(memories) {
    empty.hidden = memories.length > 0;
    list.replaceChildren(...memories.map(item));
  }

  function item(memory) {
    const text = h("textarea", { class: "input", testid: "memory-text", "aria-label": "Memory text" });
    text.value = memory.text;
    const when = new Date(memory.created_at * 1000).toLocaleString();
    const meta = [memory.kind, memory.source, memory.tags.join(", "), when].filter(Boolean).join(" · ");
    const save = h("button", { type: "button", class: "btn small", testid: "memory-save" }, "Save");
    const remove = h("button", { type: "button", class: "btn small danger", testid: "memory-delete" }, "Delete");
    const row = h("li", { class: "memory-item", testid: "memory-item", data: { memoryId: memory.id } },
      h("span", { class: "memory-meta" }, meta), text, h("div", { class: "memory-actions" }, save, remove));
    save.addEventListener("click", async () => {
      try {
        await postJson(`/api/memory/${encodeURIComponent(memory.id)}?${params()}`, { text: text.value });
        notices.push({ title: "Memory saved", message: "", type: "success" });
      } catch (err) {
        notices.error(err, "Memory");
      }
    });
    remove.addEventListener("click", async () => {
      try {
        await postJson(`/api/memory/delete?${params()}`, { ids: [memory.id] });
        row.remove();
        empty.hidden = list.children.length > 0;
      } catch (err) {
        notices.error(err, "Memory");
      }
    });
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
