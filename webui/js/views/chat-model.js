// The chat header's model picker: Default (the settings' models), one of the model
// presets made in Settings, or (the group "Models") any chat model the settings name,
// by its name (those this person may choose: GET /api/presets), for the selected chat
// only. The chat's state says what it chose (`state.model`); a choice is saved with the
// chat (PATCH /api/chats/<id>); made while the chat runs, it applies from the next run,
// and the page says so. Shown only once there is something besides Default to choose.

import { byTestId, h, setText } from "../dom.js";
import { fetchJson } from "../http.js";

/** A model's value in the menu ("model:openai/x"): no preset's name holds a ":". */
const MODEL = "model:";

/** "Fast (openai/gpt-4.1-mini)": a choice as the menu names it. */
function label(name, model) {
  return model ? `${name} (${model})` : name;
}

export function mountChatModel(root, { chats, notices }) {
  const box = byTestId("chat-model-box", root);
  const select = byTestId("chat-model", root);
  const note = byTestId("chat-model-note", root);
  /** {default: {chat_model}, presets: [{name, chat_model}], models: [{name}]} once asked for. */
  let choices = null;
  let asking = null;
  /** What the menu was last drawn from: drawn again only when it changes. */
  let drawn = "";

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
    const models = choices?.models || [];
    const fallback = choices?.default?.chat_model;
    const state = (chat && chats.selectedState.model) || {};
    const chosen = state.preset || (state.model ? MODEL + state.model : "");
    select.dataset.chosen = chosen; // what the server says the chat chose
    // A chat that chose a preset or model gone since (or not offered to this person) still shows it.
    const offered = presets.some((p) => p.name === chosen) || models.some((m) => MODEL + m.name === chosen);
    const more = presets.length || models.some((m) => m.name !== fallback);
    box.hidden = !chat || (!more && !chosen);
    if (box.hidden) return;
    const missing = chosen && !offered ? chosen : "";
    const drawing = JSON.stringify([fallback, presets, models, missing]);
    if (drawing !== drawn) {
      drawn = drawing;
      select.replaceChildren(
        h("option", { value: "" }, label("Default", fallback)),
        presets.length ? h("optgroup", { label: "Presets" },
          presets.map((p) => h("option", { value: p.name }, label(p.name, p.chat_model)))) : null,
        models.length ? h("optgroup", { label: "Models" },
          models.map((m) => h("option", { value: MODEL + m.name }, m.name))) : null,
        missing ? h("option", { value: missing, disabled: true },
          `${missing.replace(MODEL, "")} (not available)`) : null,
      );
    }
    if (document.activeElement !== select || select.value === chosen) select.value = chosen;
    const running = chats.selectedState.running;
    const now = chats.selectedState.model?.chat_model || "";
    setText(note, running && now ? `For this chat only. Working on ${now} now.` : "For this chat only.");
  }

  select.addEventListener("change", async () => {
    const chat = chats.selected;
    if (!chat) return;
    const value = select.value;
    const model = value.startsWith(MODEL) ? value.slice(MODEL.length) : "";
    const name = model || value || "Default";
    try {
      const answer = await fetchJson(`/api/chats/${encodeURIComponent(chat.id)}`, {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(model ? { model } : { preset: value }),
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
