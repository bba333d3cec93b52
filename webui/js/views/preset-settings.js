// The settings form's editor of `model_presets`: one group of fields per preset (its name,
// chat model, address, key, context window, an optional utility model, whether members
// may choose it), a Remove button on each and "Add a preset" below. A key shows as "***"
// when one is stored; left so, the stored key stays. The editor's `value` is the list as
// JSON, which the settings store reads as it reads any other field (stores/settings.js).

import { h } from "../dom.js";

/** The fields of a preset the form shows, in order: [key, label, hint, kind]. */
const FIELDS = [
  ["name", "Name", "How the chat header's menu and the API call it, e.g. Fast.", "text"],
  ["chat_model", "Chat model", "As provider/name, e.g. openai/gpt-4.1-mini.", "text"],
  ["chat_api_base", "API address", "Empty: the Model settings' one for the same provider, else the provider's usual one.", "text"],
  ["chat_api_key", "API key", "Empty: the Model settings' key for the same provider.", "secret"],
  ["chat_ctx_length", "Context window (tokens)", "Empty: the Model settings' one.", "number"],
  ["util_model", "Utility model", "Empty: the Utility model settings stay.", "text"],
  ["util_api_base", "Utility API address", "Empty: as for the chat model, from the Utility model settings.", "text"],
  ["util_api_key", "Utility API key", "Empty: as for the chat model, from the Utility model settings.", "secret"],
  ["members", "Members may choose it", "Admins may choose every preset.", "bool"],
];

let made = 0;

/** One preset's group of fields; `onRemove` takes it out of the list. */
function presetGroup(preset, readOnly, onRemove) {
  const number = ++made;
  const inputs = {};
  const legend = h("legend", {}, preset.name || "New preset");
  const rows = FIELDS.map(([key, label, hint, kind]) => {
    const id = `preset-${number}-${key}`;
    const attrs = { id, class: "input", testid: `preset-${key}`, "aria-describedby": `${id}-hint`,
      spellcheck: "false", autocomplete: kind === "secret" ? "new-password" : "off" };
    let input;
    if (kind === "bool") {
      input = h("input", { id, type: "checkbox", testid: `preset-${key}`, "aria-describedby": `${id}-hint` });
      input.checked = Boolean(preset[key]);
    } else {
      input = h("input", { ...attrs, type: kind === "secret" ? "password" : kind === "number" ? "number" : "text",
        min: kind === "number" ? 1 : null, step: kind === "number" ? 1 : null });
      input.value = preset[key] ?? "";
      if (kind === "secret" && preset[key] === "***") input.title = "Stored. Leave *** to keep it.";
    }
    if (readOnly) input.disabled = true;
    inputs[key] = input;
    const note = h("span", { class: "field-hint", id: `${id}-hint` }, hint);
    const name = h("label", { for: id }, label);
    if (kind === "bool") return h("div", { class: "field check wide" }, h("div", { class: "check-line" }, input, name), note);
    return h("div", { class: "field" }, name, input, note);
  });
  inputs.name.addEventListener("input", () => {
    legend.textContent = inputs.name.value.trim() || "New preset";
  });
  const remove = h("button", { type: "button", class: "btn small danger-text", testid: "preset-remove",
    disabled: readOnly, onclick: () => onRemove(group) }, "Remove this preset");
  const group = h("fieldset", { class: "preset", testid: "preset" }, legend, ...rows,
    h("div", { class: "field wide" }, remove));
  group._read = () => {
    const read = { ...preset }; // what the form does not show (extra parameters) stays
    for (const [key, , , kind] of FIELDS) {
      const input = inputs[key];
      if (kind === "bool") read[key] = input.checked;
      else if (kind === "number") read[key] = input.value.trim() === "" ? null : Number(input.value);
      else read[key] = input.value.trim();
    }
    return read;
  };
  group._focus = () => inputs.name.focus();
  return group;
}

/** The editor (`attrs`: id, name, test id and data-setting of the form's field); `presets`
 * as the server sent them; `readOnly` when the environment sets them. */
export function presetsEditor(attrs, presets, readOnly) {
  const list = h("div", { class: "presets-list" });
  const empty = h("p", { class: "field-hint", testid: "presets-empty" },
    "No presets yet: every chat uses the models above.");
  const add = h("button", { type: "button", class: "btn small", testid: "preset-add", disabled: readOnly }, "Add a preset");
  const editor = h("div", { ...attrs, class: "presets-editor", role: "group" }, list, empty, add);
  const removeGroup = (group) => {
    group.remove();
    empty.hidden = list.children.length > 0;
    add.focus();
  };
  for (const preset of presets || []) list.append(presetGroup(preset, readOnly, removeGroup));
  empty.hidden = list.children.length > 0;
  add.addEventListener("click", () => {
    const group = presetGroup({ name: "", chat_model: "", members: false }, readOnly, removeGroup);
    list.append(group);
    empty.hidden = true;
    group._focus();
  });
  Object.defineProperty(editor, "value", {
    get: () => JSON.stringify([...list.children].map((group) => group._read())),
  });
  return editor;
}
