// The "Context" modal: the exact prompt of an agent's last model call, each
// message with its role, and the token count.

import { byTestId, compactNumber, h, setText } from "../dom.js";
import { nameOf } from "../stores/tree.js";

export function mountContext({ context, chats, tree }) {
  const dialog = byTestId("context");
  const view = byTestId("context-view");
  const select = byTestId("context-agent");
  const summary = byTestId("context-tokens");

  function agents() {
    const list = chats.selectedState.agents || [];
    return list.length ? list : [{ number: 0, profile: "" }];
  }

  function fillAgents(chosen) {
    select.replaceChildren(
      ...agents().map((a) => h("option", { value: nameOf(a) }, `${nameOf(a)}${a.profile ? ` · ${a.profile}` : ""}`)),
    );
    select.value = String(chosen);
  }

  function render() {
    if (context.loading) {
      setText(summary, "Loading…");
      view.replaceChildren();
      return;
    }
    if (context.error) {
      setText(summary, "");
      view.replaceChildren(h("p", { class: "error-text", testid: "context-error" }, context.error));
      return;
    }
    const data = context.data;
    if (!data) return;
    const messages = data.messages || [];
    setText(summary, `${messages.length} messages · ${compactNumber(data.tokens)} tokens (${data.tokens})`);
    view.replaceChildren(
      ...(messages.length
        ? messages.map((m) =>
          h("section", { class: `ctx-message role-${m.role}`, testid: "context-message", data: { role: m.role } },
            h("header", { class: "ctx-role" }, m.role),
            h("pre", { class: "ctx-content" }, typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2))))
        : [h("p", { class: "muted" }, "This agent has not called the model yet.")]),
    );
  }

  function load() {
    const chatId = chats.selectedId;
    if (chatId) context.load(chatId, select.value);
  }

  byTestId("context-open").addEventListener("click", () => {
    if (!chats.selectedId) return;
    const state = chats.selectedState;
    const chosen = tree.filter ?? state.working?.at(-1) ?? `A${state.working_agent ?? 0}`;
    fillAgents(chosen);
    dialog.showModal();
    load();
  });
  select.addEventListener("change", load);
  byTestId("context-refresh").addEventListener("click", load);
  byTestId("context-close").addEventListener("click", () => dialog.close());
  chats.on("selected", () => {
    byTestId("context-open").disabled = !chats.selectedId;
  });
  context.on("change", render);
}
