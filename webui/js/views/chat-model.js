// The chat header's model picker: Default (the settings' models) or one of the model
// presets made in Settings (those this person may choose: GET /api/presets), for the
// selected chat only. The chat's state says what it chose (`state.model`); a choice is
// saved with the chat (PATCH /api/chats/<id>); made while the chat runs, it applies from
// the next run, and the page says so. Shown only once there is a preset to choose.

import { byTestId, h, setText } from "../dom.js";
import { fetchJson } from "../http.js";

/** "Fast (openai/gpt-4.1-mini)": a choice as the menu names it. */
function label(name, model) {
  return model ? `${name} (${model})` : name;
}

export function mountChatModel(root, { chats, notices }) {
  const box = byTestId("chat-model-box", root);
  const select = byTestId("chat-model", root);
  const note = byTestId("chat-model-note", root);
  /** {default: {chat_model}, presets: [{name, chat_model}]} once asked for. */
  let choices = null;
  let asking = null;

  async function loadChoices() {
    asking ??= fetchJson("/api/presets").then((found) => {
      choices = found;
    }).catch(() => {
      choices = null; // no picker: the chat runs on its choice all the same
    }).finally(() => {
      asking = null;
    });
    await asking;
    render();
  }

  function render() {
    const chat = chats.selected;
    const presets = choices?.presets || [];
    const chosen = chat ? chats.selectedState.model?.preset || "" : "";
    select.dataset.chosen = chosen; // what the server says the chat chose
    // A chat that chose a preset gone since (or not offered to this person) still shows it.
    const offered = presets.some((p) => p.name === chosen);
    box.hidden = !chat || (!presets.length && !chosen);
    if (box.hidden) return;
    const options = [
      h("option", { value: "" }, label("Default", choices?.default?.chat_model)),
      ...presets.map((p) => h("option", { value: p.name }, label(p.name, p.chat_model))),
      ...(chosen && !offered ? [h("option", { value: chosen, disabled: true }, `${chosen} (not available)`)] : []),
    ];
    if (select.options.length !== options.length ||
        options.some((o, i) => select.options[i].textContent !== o.textContent)) {
      select.replaceChildren(...options);
    }
    if (document.activeElement !== select || select.value === chosen) select.value = chosen;
    const running = chats.selectedState.running;
    const now = chats.selectedState.model?.chat_model || "";
    setText(note, running && now ? `For this chat only. Working on ${now} now.` : "For this chat only.");
  }

  select.addEventListener("change", async () => {
    const chat = chats.selected;
    if (!chat) return;
    const preset = select.value;
    const name = preset || "Default";
    try {
      const answer = await fetchJson(`/api/chats/${encodeURIComponent(chat.id)}`, {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ preset }),
      });
      const state = chats.stateOf(chat.id);
      chats.states.set(chat.id, { ...state, model: answer.model });
      if (answer.running) {
        notices.push({ title: `Model: ${name}`, message: "The run going on keeps its model; the next one uses this.", type: "info" });
      }
    } catch (err) {
      notices.error(err, "Model");
    }
    render();
  });

  chats.on("selected", () => loadChoices());
  chats.on("state", (chatId) => {
    if (chatId === chats.selectedId) render();
  });
  loadChoices();
}
