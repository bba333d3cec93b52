// The settings modal: fields from stores/settings.js SECTIONS, Agent 0's
// profile as a select of the discovered profiles, the server's errors shown.

import { byTestId, h, setText } from "../dom.js";
import { MASK, SECTIONS } from "../stores/settings.js";

export function mountSettings({ settings, notices }) {
  const dialog = byTestId("settings");
  const form = dialog.querySelector("form");
  const body = dialog.querySelector(".settings-body");
  const error = byTestId("settings-error");
  const save = byTestId("settings-save");
  let inputs = new Map();

  function field(spec) {
    const id = `setting-${spec.name}`;
    const value = settings.values?.[spec.name];
    let input;
    if (spec.kind === "profile") {
      input = profileSelect(id, value);
    } else if (spec.kind === "bool") {
      input = h("input", { id, name: spec.name, type: "checkbox", testid: `field-${spec.name}` });
      input.checked = Boolean(value);
    } else {
      input = h("input", {
        id,
        name: spec.name,
        class: "input",
        testid: `field-${spec.name}`,
        type: ["password", "apikey"].includes(spec.kind) ? "password" : spec.kind === "number" ? "number" : "text",
        autocomplete: spec.kind === "text" || spec.kind === "number" ? "off" : "new-password",
        spellcheck: "false",
        step: spec.kind === "number" ? "any" : null,
      });
      input.value = value ?? "";
      if (spec.kind !== "text" && value === MASK) input.title = "Stored. Leave *** to keep it.";
    }
    inputs.set(spec.name, input);
    const row = spec.kind === "apikey" ? apiKeyRow(input) : input;
    const hint = input._description || (spec.hint ? h("span", { class: "field-hint" }, spec.hint) : null);
    if (spec.kind === "bool") {
      return h("div", { class: "field check wide" }, input, h("label", { for: id }, spec.label), hint);
    }
    const cls = spec.kind === "profile" ? "field wide" : "field";
    return h("div", { class: cls }, h("label", { for: id }, spec.label), row, hint);
  }

  /** The API key's input with Show (reveal in clear) and New key (replace it). */
  function apiKeyRow(input) {
    const show = async () => {
      const key = await settings.revealApiKey();
      if (key === null) return;
      input.type = "text";
      input.value = key;
    };
    const regenerate = async () => {
      const key = await settings.regenerateApiKey();
      if (key === null) return;
      input.type = "text";
      input.value = key;
      notices.push({ title: "New API key", message: "The old key no longer works.", type: "success" });
    };
    return h("div", { class: "field-row" }, input,
      h("button", { type: "button", class: "btn small", testid: "api-key-reveal", onclick: show }, "Show"),
      h("button", { type: "button", class: "btn small", testid: "api-key-regenerate", onclick: regenerate }, "New key"));
  }

  function profileSelect(id, value) {
    const select = h("select", { id, name: "agent_profile", class: "input", testid: "profile-select" });
    const description = h("p", { class: "field-hint profile-description", testid: "profile-description" });
    for (const p of settings.profiles) {
      const text = p.available
        ? `${p.title || p.name}${p.description ? ` — ${p.description}` : ""}`
        : `${p.title || p.name} (unavailable: ${p.error || "unknown error"})`;
      const option = h("option", { value: p.name, disabled: !p.available }, text);
      select.append(option);
    }
    if (value && !settings.profiles.some((p) => p.name === value)) {
      select.append(h("option", { value, disabled: true }, `${value} (not found)`));
    }
    select.value = value ?? "";
    const describe = () => {
      const p = settings.profiles.find((x) => x.name === select.value);
      setText(description, p ? p.description || "" : "");
    };
    select.addEventListener("change", describe);
    queueMicrotask(describe);
    select._description = description;
    return select;
  }

  function render() {
    inputs = new Map();
    const sections = [...SECTIONS];
    const extra = settings.extraFields();
    if (extra.length) sections.push({ title: "More", fields: extra });
    body.replaceChildren(
      ...sections.map((section) =>
        h("fieldset", { class: "settings-section" },
          h("legend", {}, section.title), ...section.fields.map(field))),
    );
  }

  function renderState() {
    setText(error, settings.error);
    error.hidden = !settings.error;
    save.disabled = settings.saving || !settings.values;
    setText(save, settings.saving ? "Saving…" : "Save");
  }

  byTestId("settings-open").addEventListener("click", async () => {
    body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    dialog.showModal();
    await settings.load();
    render();
    renderState();
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = {};
    for (const [name, input] of inputs) values[name] = input.type === "checkbox" ? input.checked : input.value;
    if (await settings.save(values)) {
      dialog.close();
      notices.push({ title: "Settings saved", message: "They apply to new messages.", type: "success" });
    }
  });
  byTestId("settings-cancel").addEventListener("click", () => dialog.close());
  settings.on("change", renderState);
}
