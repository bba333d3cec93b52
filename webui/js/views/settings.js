// The settings modal, rendered from the server's description of each field
// (label, hint, unit, heading, control): a menu for a fixed set of values, a
// checkbox for yes/no, a number box with its bounds, one entry per line for a
// list, JSON for parameters. A field the environment sets is read-only, with a
// note naming the variable. What is wrong with a field is said next to it.
// The MCP servers' JSON has its own editor with the servers' status (mcp-settings.js).
// Escape with changes made asks before throwing them away.

import { byTestId, h, setText } from "../dom.js";
import { showSandbox } from "../sandbox-status.js";
import { MASK, shown } from "../stores/settings.js";
import { confirmDialog } from "./dialogs.js";
import { mcpPanel, mcpTextarea } from "./mcp-settings.js";
import { presetsEditor } from "./preset-settings.js";
import { profileGraphSection } from "./profile-graph.js";
import { profileStatusSection } from "./profile-status.js";

const WIDE = new Set(["profile", "bool", "lines", "json", "json_list", "secrets", "mcp_servers", "model_presets"]);
/** A menu whose longest choice is longer than this (characters) takes the form's whole
 * width: a native menu cannot wrap its text, and half the form cut it. */
const LONG_CHOICE = 36;

function wide(spec) {
  if (WIDE.has(spec.kind)) return true;
  return spec.kind === "choice" && spec.options.some((o) => o.label.length > LONG_CHOICE);
}

export function mountSettings({ settings, notices, mcp }) {
  const dialog = byTestId("settings");
  const form = dialog.querySelector("form");
  const body = dialog.querySelector(".settings-body");
  const error = byTestId("settings-error");
  const save = byTestId("settings-save");
  /** name → {input, problem, describedBy}: the control, the element saying what is wrong
   * with it, and the ids of the texts that always describe it. */
  let rows = new Map();
  /** What stops the current form's listeners (the MCP editor's) when it is rebuilt or closed. */
  let cleanups = [];

  function control(spec, id) {
    const value = settings.values?.[spec.name];
    const common = { id, name: spec.name, testid: `field-${spec.name}`, data: { setting: spec.name } };
    let input;
    if (spec.kind === "profile") {
      input = profileSelect(id, value);
    } else if (spec.kind === "mcp_servers") {
      input = mcpTextarea(common, shown(spec, value));
    } else if (spec.kind === "model_presets") {
      input = presetsEditor({ ...common, "aria-labelledby": `${id}-label` }, value, Boolean(spec.env));
    } else if (spec.kind === "bool") {
      input = h("input", { ...common, type: "checkbox" });
      input.checked = Boolean(value);
    } else if (spec.kind === "choice") {
      input = h("select", { ...common, class: "input" },
        ...spec.options.map((o) => h("option", { value: o.value }, o.label)));
      input.value = value ?? "";
    } else if (["lines", "json", "json_list", "secrets"].includes(spec.kind)) {
      const text = shown(spec, value);
      input = h("textarea", {
        ...common, class: "input code", spellcheck: "false", autocomplete: "off",
        rows: Math.min(8, Math.max(2, text.split("\n").length)),
        placeholder: spec.kind === "json" ? "{}" : spec.kind === "json_list" ? "[]" : spec.kind === "secrets" ? "NAME=value" : "one per line",
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
    const panel = spec.kind === "mcp_servers" ? mcpField(spec, input) : null;
    const sandbox = spec.name === "work_dir" ? sandboxNote(id) : null;
    const describedBy = [hint.id, env?.id, panel?.note.id, sandbox?.id].filter(Boolean);
    input.setAttribute("aria-describedby", describedBy.join(" "));
    rows.set(spec.name, { input, problem, describedBy });

    const unit = spec.unit ? h("span", { class: "field-unit", testid: `unit-${spec.name}` }, spec.unit) : null;
    // A group of fields has no one control a label could name: the group is labelled by it.
    const label = spec.kind === "model_presets"
      ? h("span", { class: "field-label", id: `${id}-label` }, spec.title)
      : h("label", { for: id }, spec.title);
    let row = input;
    if (spec.kind === "apikey") row = apiKeyRow(input);
    else if (spec.kind === "number" && unit) row = h("div", { class: "field-row" }, input, unit);
    else if (unit) label.append(" ", h("span", { class: "field-unit" }, `(${spec.unit})`));
    const extra = [input._description, hint, env, problem, panel?.note, panel?.el, sandbox];
    if (spec.kind === "bool") {
      return h("div", { class: "field check wide" }, h("div", { class: "check-line" }, input, label), ...extra);
    }
    return h("div", { class: wide(spec) ? "field wide" : "field" }, label, row, ...extra);
  }

  /** Whether commands run sandboxed, under the work folder (a warning when they do not). */
  function sandboxNote(id) {
    const note = h("p", { class: "field-hint sandbox-status", id: `${id}-sandbox`,
      testid: "settings-sandbox", role: "status" });
    showSandbox(note, settings.sandbox);
    return note;
  }

  /** The MCP editor's check and status list; the check's error shows as the field's. */
  function mcpField(spec, input) {
    const panel = mcpPanel({ mcp, input, setError: (text) => settings.setFieldError(spec.name, text) });
    cleanups.push(() => panel.dispose());
    return panel;
  }

  function dispose() {
    for (const cleanup of cleanups) cleanup();
    cleanups = [];
  }

  /** The API key's input with Show (reveal in clear) and New key (replace it). */
  function apiKeyRow(input) {
    // The key shown, or a new one (stored already): not an edit Escape would throw away.
    const shownKey = (key) => {
      input.type = "text";
      input.value = key;
      opened[input.name] = key;
    };
    const show = async () => {
      const key = await settings.revealApiKey();
      if (key !== null) shownKey(key);
    };
    const regenerate = async () => {
      const key = await settings.regenerateApiKey();
      if (key === null) return;
      shownKey(key);
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
    // The title only: the chosen one's description is said below the menu (a menu cannot
    // wrap, and a description cut halfway says nothing).
    for (const p of settings.profiles) {
      const text = p.available ? p.title || p.name : `${p.title || p.name} (unavailable)`;
      const option = h("option", { value: p.name, disabled: !p.available }, text);
      select.append(option);
    }
    if (value && !settings.profiles.some((p) => p.name === value)) {
      select.append(h("option", { value, disabled: true }, `${value} (not found)`));
    }
    select.value = value ?? "";
    const describe = () => {
      const p = settings.profiles.find((x) => x.name === select.value);
      const unusable = p && !p.available ? `Unavailable: ${p.error || "unknown error"}` : "";
      setText(description, p ? unusable || p.description || "" : "");
    };
    select.addEventListener("change", describe);
    queueMicrotask(describe);
    select._description = description;
    return select;
  }

  function render() {
    dispose();
    rows = new Map();
    // Who may call whom and the profiles' status go with the agents' settings (last, if
    // there is no such heading).
    const agents = () => [profileGraphSection(settings.graph), profileStatusSection(settings.profiles)];
    body.replaceChildren(
      ...settings.sections().flatMap((section) => [
        h("fieldset", { class: "settings-section" },
          h("legend", {}, section.title), ...section.fields.map(field)),
        ...(section.title === "Agents" ? agents() : []),
      ]),
    );
    if (!settings.groups.includes("Agents")) body.append(...agents());
  }

  function renderState() {
    setText(error, settings.error);
    error.hidden = !settings.error;
    save.disabled = settings.saving || !settings.values;
    setText(save, settings.saving ? "Saving…" : "Save");
    for (const [name, { input, problem, describedBy }] of rows) {
      const wrong = settings.fieldErrors[name] || "";
      setText(problem, wrong);
      problem.hidden = !wrong;
      // aria-errormessage is not read by every screen reader; the description is.
      input.setAttribute("aria-describedby", [...describedBy, ...(wrong ? [problem.id] : [])].join(" "));
      if (wrong) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-errormessage", problem.id);
      } else {
        input.removeAttribute("aria-invalid");
        input.removeAttribute("aria-errormessage");
      }
    }
  }

  /** The form's values by setting name. */
  function formValues() {
    const values = {};
    for (const [name, { input }] of rows) values[name] = input.type === "checkbox" ? input.checked : input.value;
    return values;
  }

  /** The values the form opened with: Escape asks before throwing changes away. */
  let opened = {};
  const edited = () => Object.entries(formValues()).some(([name, value]) => opened[name] !== value);

  byTestId("settings-open").addEventListener("click", async () => {
    body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    dispose();
    rows = new Map();
    dialog.showModal();
    await settings.load();
    render();
    renderState();
    opened = formValues();
    // The MCP servers' status is asked for only while the form can show it.
    if (rows.has("mcp_servers") && dialog.open) mcp.start();
  });
  dialog.addEventListener("close", () => {
    mcp.stop();
    dispose();
  });

  // Escape closes a dialog at once: with changes made, ask first (Cancel is a choice made).
  dialog.addEventListener("cancel", async (event) => {
    if (!edited()) return;
    event.preventDefault();
    const discard = await confirmDialog("Discard your changes?",
      "The settings you changed are not saved yet.",
      { okLabel: "Discard", cancelLabel: "Keep editing", danger: true });
    if (discard) dialog.close();
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = formValues();
    const mcpChanged = "mcp_servers" in values && values.mcp_servers !== (settings.values?.mcp_servers ?? "");
    if (await settings.save(values)) {
      dialog.close();
      const message = mcpChanged
        ? "They apply to new messages. The MCP servers start in the background; Settings shows how they are doing."
        : "They apply to new messages.";
      notices.push({ title: "Settings saved", message, type: "success" });
      return;
    }
    const first = [...rows.values()].find(({ input }) => input.getAttribute("aria-invalid") === "true");
    first?.input.focus();
  });
  byTestId("settings-cancel").addEventListener("click", () => dialog.close());
  settings.on("change", renderState);
}
