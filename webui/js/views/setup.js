// The model banner (embedded model, local model loading) and the setup dialog:
// pick a provider, give its key, URL or file (each with an example), pick a
// model from the provider's own list or type one, see which embedding model
// memory will use, test, save. Saving tests first and refuses a model that
// fails, in plain words with the fix, unless the person chooses "Save anyway".
// The dialog opens by itself once, on a first visit that still runs on the
// embedded model; the banner and Settings ("Set up a model…") open it again. The model
// is the admin's: a member sees the banner but is offered no setup (`.admin-only`).

import { byTestId, h, setText } from "../dom.js";
import { mountStepRetry } from "./failure.js";

const SEEN = "cadre.setup.seen";
const KEYWORDS_ONLY = "Memory will use keyword search only.";

export function mountSetup({ setup, notices, chats, me }) {
  const banner = byTestId("model-banner");
  const bannerText = byTestId("model-banner-text");
  const dialog = byTestId("setup");
  const form = dialog.querySelector("form");
  const select = byTestId("setup-provider");
  const fields = dialog.querySelector(".setup-fields");
  const result = byTestId("setup-result");
  const testButton = byTestId("setup-test");
  const saveButton = byTestId("setup-save");
  const forceButton = byTestId("setup-save-anyway");
  const modelList = h("datalist", { id: "setup-models-list" });
  const modelStatus = h("p", { class: "setup-hint", testid: "setup-models-status", "aria-live": "polite" });
  const embedNote = h("p", { class: "setup-hint", testid: "setup-embed-note" });
  let inputs = {};

  function provider() {
    return setup.status?.providers.find((p) => p.name === select.value) || null;
  }

  function field(name, label, { type = "text", value = "", placeholder = "", list = null } = {}) {
    const id = `setup-${name}`;
    const input = h("input", {
      id, class: "input", type, testid: `setup-${name}`, autocomplete: "off", placeholder, list,
    });
    input.value = value;
    inputs[name] = input;
    return [h("label", { for: id }, label), input];
  }

  function renderFields() {
    const chosen = provider();
    inputs = {};
    setup.clearModels();
    if (!chosen) return fields.replaceChildren();
    const parts = [];
    const builtIn = chosen.name === "embedded";
    if (!chosen.needs_file && !builtIn) {
      // A name without the provider's prefix gets it on the server (server/routes/setup.py): the
      // server of an OpenAI-compatible URL knows its models by their own names.
      const example = chosen.name === "compatible"
        ? "the name the server gives it, e.g. llama3.1" : `e.g. ${chosen.model_example}`;
      parts.push(...field("model", "Model", {
        value: chosen.chat_model, placeholder: example, list: modelList.id,
      }), modelList, modelStatus);
    }
    if (chosen.key_field) {
      parts.push(...field("api_key", chosen.needs_key ? "API key" : "API key (optional)", {
        type: "password", placeholder: chosen.needs_key ? `e.g. ${chosen.key_example}` : chosen.key_example,
      }));
    }
    if (chosen.needs_url) {
      parts.push(...field("api_base", "URL", {
        value: chosen.default_url, placeholder: `e.g. ${chosen.url_example}`,
      }));
    }
    if (chosen.needs_file) {
      parts.push(...field("path", "Path of the .gguf file on this machine", {
        placeholder: "e.g. /home/you/models/model.gguf",
      }));
    }
    if (chosen.key_field) {
      parts.push(...field("embed_model", "Embedding model (for memory)", {
        value: chosen.embed_model, placeholder: "none: keyword search only",
      }));
      inputs.embed_model.addEventListener("input", renderEmbedNote);
    }
    parts.push(embedNote);
    fields.replaceChildren(...parts);
    for (const name of ["api_key", "api_base"]) {
      inputs[name]?.addEventListener("change", () => fetchModels());
    }
    renderEmbedNote();
    fetchModels();
  }

  function renderEmbedNote() {
    const chosen = provider();
    const embed = inputs.embed_model ? inputs.embed_model.value.trim() : "";
    setText(embedNote, embed
      ? `Memory searches by meaning with ${embed}, and by keywords.`
      : chosen?.embed_note ? `${chosen.embed_note}` : KEYWORDS_ONLY);
  }

  /** Ask the provider for its models once what it needs (key, URL) is there. */
  function fetchModels() {
    const chosen = provider();
    if (!chosen?.models || !inputs.model) return;
    const values = choice();
    if (chosen.needs_key && !values.api_key) {
      setup.clearModels();
      return;
    }
    if (chosen.needs_url && !/^https?:\/\//.test(values.api_base || "")) return;
    setup.listModels(values);
  }

  function choice() {
    const values = { provider: select.value };
    for (const [name, input] of Object.entries(inputs)) values[name] = input.value.trim();
    return values;
  }

  function renderModels() {
    const { state, models, problem } = setup.models;
    const chosen = provider();
    modelList.replaceChildren(...models.map((name) => h("option", { value: name })));
    let text = "";
    const who = !chosen || chosen.name === "compatible" ? "the server" : chosen.title;
    if (state === "loading") text = `Asking ${who} for its models…`;
    else if (problem) text = `Could not get the model list: ${problem.headline} You can still type a name.`;
    else if (state === "done") {
      text = models.length
        ? `${models.length} models offered: pick one from the list, or type a name.`
        : "The provider listed no models; type the model's name.";
    }
    setText(modelStatus, text);
    modelStatus.hidden = !text;
  }

  function renderResult() {
    const outcome = setup.result;
    result.hidden = !outcome;
    if (!outcome) return;
    result.className = `setup-result ${outcome.ok ? "ok" : "fail"}`;
    const problem = outcome.problem;
    if (!problem) {
      result.replaceChildren(h("span", { testid: "setup-result-headline" }, outcome.text));
      return;
    }
    const parts = [
      h("strong", { testid: "setup-result-headline" }, problem.headline),
      " ",
      h("span", { testid: "setup-result-fix" }, problem.fix),
    ];
    if (problem.detail) {
      parts.push(h("details", { class: "setup-details" },
        h("summary", {}, "Details"), h("pre", { class: "mono" }, problem.detail)));
    }
    result.replaceChildren(...parts);
  }

  function renderBanner() {
    const status = setup.status;
    const local = status.local || {};
    let text = "";
    if (local.state === "loading") text = local.progress ? `${local.progress}…` : "Loading the local model…";
    else if (local.state === "failed") text = `The local model could not be loaded: ${local.error}`;
    else if (status.embedded) {
      text = "Cadre is running on its small built-in model (Qwen2.5-Coder 1.5B). It handles simple tasks; a real model works far better.";
    }
    if (me.isMember && (status.embedded || local.state === "failed")) text += " An admin of this server can set up another.";
    setText(bannerText, text);
    banner.hidden = !text;
  }

  function render() {
    const status = setup.status;
    if (!status) return;
    if (select.options.length === 0) {
      select.replaceChildren(...status.providers.map((p) => h("option", { value: p.name }, p.title)));
      renderFields();
    }
    renderBanner();
    renderModels();
    renderResult();
    const busy = Boolean(setup.busy);
    testButton.disabled = busy;
    saveButton.disabled = busy;
    forceButton.disabled = busy;
    setText(testButton, setup.busy === "testing" ? "Testing…" : "Test connection");
    setText(saveButton, setup.busy === "saving" ? "Testing, then saving…" : "Save");
    forceButton.hidden = !setup.canForce;
  }

  function open() {
    setup.reset();
    setup.load().catch((err) => notices.error(err, "Setup"));
    if (!dialog.open) dialog.showModal();
    fetchModels();
  }

  async function save(force) {
    if (await setup.save(choice(), force)) {
      dialog.close();
      notices.push({ title: "Model saved", message: "New messages use it; no restart needed.", type: "success" });
    }
  }

  // A changed choice is not the one tested: its verdict (and "Save anyway") no longer applies.
  fields.addEventListener("input", () => {
    if (setup.result) setup.reset();
  });
  select.addEventListener("change", () => {
    setup.reset();
    renderFields();
  });
  testButton.addEventListener("click", () => setup.test(choice()));
  forceButton.addEventListener("click", () => save(true));
  byTestId("setup-open").addEventListener("click", open);
  // An error card whose fault the dialog fixes (views/failure.js).
  document.addEventListener("cadre:open-setup", open);
  byTestId("settings-setup-model").addEventListener("click", (event) => {
    event.target.closest("dialog")?.close();
    open();
  });
  byTestId("setup-later").addEventListener("click", () => dialog.close());
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    save(false);
  });
  setup.on("change", render);
  me.on("change", () => setup.status && renderBanner());
  mountStepRetry({ chats, notices });

  // Offered once, and only to who may save it (the role is known first).
  Promise.all([setup.load(), me.ready]).then(([status]) => {
    if (status.embedded && !me.isMember && !localStorage.getItem(SEEN)) {
      localStorage.setItem(SEEN, "1");
      open();
    }
  }).catch((err) => notices.error(err, "Setup"));
}
