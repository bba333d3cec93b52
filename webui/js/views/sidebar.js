// The sidebar: new chat, import, the chat list (newest first, with running,
// paused and interrupted marks and each chat's project, filtered by project and by
// the search box; a chat's branches under it: branch-tree.js) and the chats that could
// not be loaded.

import { nestBranches } from "../branch-tree.js";
import { byTestId, h, setText } from "../dom.js";
import { ChatSearch } from "./chat-search.js";
import { mountProjectFilter } from "./project-filter.js";

export function mountSidebar(root, { chats, notices, projects }) {
  const list = byTestId("chat-list", root);
  const search = new ChatSearch(byTestId("chat-search", root), { chats, notices }, () => render());
  const damagedBox = byTestId("damaged", root);
  const damagedList = byTestId("damaged-list", root);
  const rows = new Map();
  mountProjectFilter(root, { projects, notices }, () => render());

  byTestId("new-chat", root).addEventListener("click", () => {
    chats.create().catch((err) => notices.error(err, "New chat"));
  });

  const importInput = byTestId("chat-import", root);
  importInput.addEventListener("change", async () => {
    const file = importInput.files[0];
    importInput.value = "";
    if (!file) return;
    try {
      const chat = await chats.importFile(file);
      notices.push({ title: "Imported", message: chat.name || "Chat imported", type: "success" });
    } catch (err) {
      notices.error(err, "Import failed");
    }
  });

  function row(chat) {
    let el = rows.get(chat.id);
    if (!el) {
      el = h("li", { class: "chat-row" });
      const button = h("button", {
        type: "button", class: "chat-item", testid: "chat-item", data: { chatId: chat.id },
      });
      el._name = h("span", { class: "chat-name" });
      el._dot = h("span", { class: "chat-dot", "aria-hidden": "true" });
      el._mark = h("span", { class: "chat-mark" });
      el._project = h("span", { class: "chat-project-tag", testid: "chat-item-project" });
      el._snippet = h("span", { class: "chat-snippet", testid: "chat-item-snippet", hidden: true });
      el._snippetText = "";
      el._held = h("span", { class: "chat-held", testid: "chat-item-held", hidden: true });
      el._branchOf = h("span", { class: "visually-hidden", testid: "chat-item-branch-of" });
      button.append(el._dot, el._branchOf, el._name, el._project, el._held, el._mark, el._snippet);
      button.addEventListener("click", () => {
        if (chats.selectedId !== chat.id) chats.select(chat.id).catch((err) => notices.error(err));
      });
      el._button = button;
      el.append(button);
      rows.set(chat.id, el);
    }
    setText(el._name, chat.name || "New chat");
    el._button.title = chat.project ? `${chat.name || "New chat"} (project ${chat.project})` : chat.name || "New chat";
    // The project is named on each row only while the list shows every chat.
    setText(el._project, chat.project && !projects.shown ? chat.project : "");
    el._project.hidden = !el._project.textContent;
    const mark = chat.running ? (chat.paused ? "paused" : "running") : chat.interrupted ? "interrupted" : "";
    el._button.dataset.status = mark || "idle";
    setText(el._mark, mark === "running" ? "" : mark);
    el._dot.title = mark || "idle";
    // Tool calls waiting for the person's answer (the tool policy's "ask").
    const held = chat.approvals || 0;
    el._held.hidden = held === 0;
    setText(el._held, held ? `${held} to answer` : "");
    el._held.title = held === 1 ? "A tool call waits for your answer" : `${held} tool calls wait for your answer`;
    showSnippet(el, search.snippet(chat.id));
    const selected = chat.id === chats.selectedId;
    el._button.classList.toggle("selected", selected);
    if (selected) el._button.setAttribute("aria-current", "true");
    else el._button.removeAttribute("aria-current");
    return el;
  }

  /** The words around the text searched for, the text itself marked. */
  function showSnippet(el, text) {
    if (el._snippetText === `${search.query}\n${text}`) return;
    el._snippetText = `${search.query}\n${text}`;
    el._snippet.hidden = !text;
    if (!text) return el._snippet.replaceChildren();
    const at = text.toLocaleLowerCase().indexOf(search.query.toLocaleLowerCase());
    if (at < 0) return el._snippet.replaceChildren(text);
    const end = at + search.query.length;
    el._snippet.replaceChildren(text.slice(0, at), h("mark", {}, text.slice(at, end)), text.slice(end));
  }

  /** A branch sits under its parent, indented, and says whose branch it is. */
  function placeInTree(el, depth, parent) {
    el.dataset.depth = String(depth);
    el.style.setProperty("--depth", String(Math.min(depth, 4)));
    el.classList.toggle("is-branch", depth > 0);
    setText(el._branchOf, parent ? `Branch of ${parent.name || "New chat"}: ` : "");
  }

  function render() {
    const all = chats.list();
    const seen = new Set();
    let previous = null;
    let shown = 0;
    for (const { chat, depth, parent } of nestBranches(all)) {
      const el = row(chat);
      placeInTree(el, depth, parent);
      seen.add(chat.id);
      el.hidden = !search.matches(chat) || !projects.showsChat(chat);
      if (!el.hidden) shown++;
      // Move only rows that are out of place: a stable list keeps its DOM.
      const expected = previous ? previous.nextElementSibling : list.firstElementChild;
      if (expected !== el) list.insertBefore(el, expected);
      previous = el;
    }
    for (const [id, el] of rows) {
      if (!seen.has(id)) {
        el.remove();
        rows.delete(id);
      }
    }
    list.dataset.count = String(all.length);
    byTestId("chat-list-empty", root).hidden = all.length > 0 || !chats.loaded;
    const none = byTestId("chat-search-empty", root);
    none.hidden = !(search.active || projects.shown) || shown > 0 || all.length === 0;
    setText(none, search.active ? "No chats match." : "No chats here yet: New chat starts one.");
    renderDamaged();
  }

  function renderDamaged() {
    damagedBox.hidden = chats.damaged.length === 0;
    damagedList.replaceChildren(
      ...chats.damaged.map((d) =>
        h("li", { class: "damaged-item", testid: "damaged-item", data: { chatId: d.id } },
          h("span", { class: "damaged-id" }, d.id),
          h("span", { class: "damaged-reason" }, d.reason)),
      ),
    );
  }

  chats.on("list", render);
  chats.on("selected", render);
  render();
}
