// The settings modal, rendered from the server's description of each field
// (label, hint, unit, heading, control): a menu for a fixed set of values, a
// checkbox for yes/no, a number box with its bounds, one entry per line for a
// list, JSON for parameters. A field the environment sets is read-only, with a
// note naming the variable. What is wrong with a field is said next to it.

import { byTestId, h, setText } from "../dom.js";
import { MASK, shown } from "../stores/settings.js";
import { profileGraphSection } from "./profile-graph.js";

const WIDE = new Set(["profile", "bool", "lines", "json", "secrets"]);

export function mountSettings({ settings, notices }) {
  const dialog = byTestId("settings");
  const form = dialog.querySelector("form");
  const body = dialog.querySelector(".settings-body");
  const error = byTestId("settings-error");
  const save = byTestId("settings-save");
  /** name → {input, problem}: the control and the element saying what is wrong with it. */
  let rows = new Map();

  function control(spec, id) {
    const value = settings.values?.[spec.name];
    const common = { id, name: spec.name, testid: `field-${spec.name}`, data: { setting: spec.name } };
    let input;
    if (spec.kind === "profile") {
      input = profileSelect(id, value);
    } else if (spec.kind === "bool") {
      input = h("input", { ...common, type: "checkbox" });
      input.checked = Boolean(value);
    } else if (spec.kind === "choice") {
      input = h("select", { ...common, class: "input" },
        ...spec.options.map((o) => h("option", { value: o.value }, o.label)));
      input.value = value ?? "";
    } else if (["lines", "json", "secrets"].includes(spec.kind)) {
      const text = shown(spec, value);
      input = h("textarea", {
        ...common, class: "input code", spellcheck: "false", autocomplete: "off",
        rows: Math.min(8, Math.max(2, text.split("\n").length)),
        placeholder: spec.kind === "json" ? "{}" : spec.kind === "secrets" ? "NAME=value" : "one per line",
      });
      input.value = text;
    } else {
      const secret = spec.secret || spec.kind === "password" || spec.kind === "apikey";
      input = h("input", {
        ...common,
        class: "input",
        type: secret ? "password" : spec.kind === "number" ? "number" : "text",
        autocomplete: secret ? "new-password" : "off",
        spellcheck: "false",
        min: spec.kind === "number" ? spec.minimum : null,
        max: spec.kind === "number" ? spec.maximum : null,
        step: spec.kind === "number" ? spec.step : null,
      });
      input.value = shown(spec, value);
      if (secret && value === MASK) input.title = "Stored. Leave *** to keep it.";
    }
    if (spec.env) {
      // A select or a checkbox has no read-only state: it is disabled instead.
      if (input.tagName === "INPUT" && input.type !== "checkbox") input.readOnly = true;
      else if (input.tagName === "TEXTAREA") input.readOnly = true;
      else input.disabled = true;
    }
    return input;
  }

  function field(spec) {
    const id = `setting-${spec.name}`;
    const input = control(spec, id);
    const hint = h("span", { class: "field-hint", id: `${id}-hint`, testid: `hint-${spec.name}` }, spec.description);
    const env = spec.env
      ? h("span", { class: "field-env", id: `${id}-env`, testid: `env-${spec.name}` },
        `Set by ${spec.env}; change it there.`)
      : null;
    const problem = h("span", { class: "field-error", id: `${id}-error`, testid: `field-error-${spec.name}`, hidden: true });
    input.setAttribute("aria-describedby", [hint.id, env?.id].filter(Boolean).join(" "));
    rows.set(spec.name, { input, problem });

    const unit = spec.unit ? h("span", { class: "field-unit", testid: `unit-${spec.name}` }, spec.unit) : null;
    const label = h("label", { for: id }, spec.title);
    let row = input;
    if (spec.kind === "apikey") row = apiKeyRow(input);
    else if (spec.kind === "number" && unit) row = h("div", { class: "field-row" }, input, unit);
    else if (unit) label.append(" ", h("span", { class: "field-unit" }, `(${spec.unit})`));
    const extra = [input._description, hint, env, problem];
    if (spec.kind === "bool") {
      return h("div", { class: "field check wide" }, h("div", { class: "check-line" }, input, label), ...extra);
    }
    return h("div", { class: WIDE.has(spec.kind) ? "field wide" : "field" }, label, row, ...extra);
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
      h("button", { type: "button", class: "btn small", testid: "api-key-regenerate", onclick: regenerate,
        disabled: Boolean(input.readOnly) }, "New key"));
  }

  function profileSelect(id, value) {
    const select = h("select", { id, name: "agent_profile", class: "input", testid: "profile-select",
      data: { setting: "agent_profile" } });
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
    rows = new Map();
    // Who may call whom goes with the agents' settings (last, if there is no such heading).
    body.replaceChildren(
      ...settings.sections().flatMap((section) => [
        h("fieldset", { class: "settings-section" },
          h("legend", {}, section.title), ...section.fields.map(field)),
        section.title === "Agents" ? profileGraphSection(settings.graph) : null,
      ].filter(Boolean)),
    );
    if (!settings.groups.includes("Agents")) body.append(profileGraphSection(settings.graph));
  }

  function renderState() {
    setText(error, settings.error);
    error.hidden = !settings.error;
    save.disabled = settings.saving || !settings.values;
    setText(save, settings.saving ? "Saving…" : "Save");
    for (const [name, { input, problem }] of rows) {
      const wrong = settings.fieldErrors[name] || "";
      setText(problem, wrong);
      problem.hidden = !wrong;
      if (wrong) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-errormessage", problem.id);
      } else {
        input.removeAttribute("aria-invalid");
        input.removeAttribute("aria-errormessage");
      }
    }
  }

  byTestId("settings-open").addEventListener("click", async () => {
    body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    rows = new Map();
    dialog.showModal();
    await settings.load();
    render();
    renderState();
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = {};
    for (const [name, { input }] of rows) values[name] = input.type === "checkbox" ? input.checked : input.value;
    if (await settings.save(values)) {
      dialog.close();
      notices.push({ title: "Settings saved", message: "They apply to new messages.", type: "success" });
      return;
    }
    const first = [...rows.values()].find(({ input }) => input.getAttribute("aria-invalid") === "true");
    first?.input.focus();
  });
  byTestId("settings-cancel").addEventListener("click", () => dialog.close());
  settings.on("change", renderState);
}
