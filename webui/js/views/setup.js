// The model banner (embedded model, local model loading) and the setup dialog:
// pick a provider, give its key, URL or file, test the connection, save.
// The dialog opens by itself once, on a first visit that still runs on the
// embedded model.

import { byTestId, h, setText } from "../dom.js";

const SEEN = "cadre.setup.seen";

export function mountSetup({ setup, notices }) {
  const banner = byTestId("model-banner");
  const bannerText = byTestId("model-banner-text");
  const dialog = byTestId("setup");
  const form = dialog.querySelector("form");
  const select = byTestId("setup-provider");
  const fields = dialog.querySelector(".setup-fields");
  const result = byTestId("setup-result");
  const testButton = byTestId("setup-test");
  let inputs = {};

  function field(name, label, type = "text", value = "") {
    const id = `setup-${name}`;
    const input = h("input", { id, class: "input", type, testid: `setup-${name}`, autocomplete: "off" });
    input.value = value;
    inputs[name] = input;
    return [h("label", { for: id }, label), input];
  }

  function renderFields() {
    const provider = setup.status?.providers.find((p) => p.name === select.value);
    inputs = {};
    if (!provider) return fields.replaceChildren();
    const parts = [];
    const builtIn = provider.name === "embedded";
    if (!provider.needs_file && !builtIn) {
      parts.push(...field("model", "Model (litellm name)", "text", provider.chat_model));
    }
    if (provider.needs_key) parts.push(...field("api_key", "API key", "password"));
    if (provider.needs_url) parts.push(...field("api_base", "URL", "text", provider.default_url));
    if (provider.needs_file) parts.push(...field("path", "Path of the .gguf file on this machine"));
    fields.replaceChildren(...parts);
  }

  function choice() {
    const values = { provider: select.value };
    for (const [name, input] of Object.entries(inputs)) values[name] = input.value.trim();
    return values;
  }

  function render() {
    const status = setup.status;
    if (!status) return;
    if (select.options.length === 0) {
      select.replaceChildren(...status.providers.map((p) => h("option", { value: p.name }, p.title)));
      renderFields();
    }
    const local = status.local || {};
    let text = "";
    if (local.state === "loading") text = "Loading the local model…";
    else if (local.state === "failed") text = `The local model could not be loaded: ${local.error}`;
    else if (status.embedded) {
      text = "Cadre is running on its small built-in model (Gemma 3 270M). It answers poorly; a real model works far better.";
    }
    setText(bannerText, text);
    banner.hidden = !text;
    testButton.disabled = setup.testing;
    setText(testButton, setup.testing ? "Testing…" : "Test connection");
    result.hidden = !setup.result;
    if (setup.result) {
      setText(result, setup.result.text);
      result.className = `setup-result ${setup.result.ok ? "ok" : "fail"}`;
    }
  }

  function open() {
    setup.result = null;
    render();
    if (!dialog.open) dialog.showModal();
  }

  select.addEventListener("change", () => {
    setup.result = null;
    renderFields();
    render();
  });
  testButton.addEventListener("click", () => setup.test(choice()));
  byTestId("setup-open").addEventListener("click", open);
  byTestId("setup-later").addEventListener("click", () => dialog.close());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await setup.save(choice())) {
      dialog.close();
      notices.push({ title: "Model saved", message: "New messages use it; no restart needed.", type: "success" });
    }
  });
  setup.on("change", render);

  setup.load().then((status) => {
    if (status.embedded && !localStorage.getItem(SEEN)) {
      localStorage.setItem(SEEN, "1");
      open();
    }
  }).catch((err) => notices.error(err, "Setup"));
}
