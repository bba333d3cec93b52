// My account's "My settings": what a person sets for their own agents on top of the
// server's settings (accounts/personal.py): their secrets (my-secrets.js), their models
// and provider keys where the admin allows it, their own remote MCP servers and how each
// is doing. One Save sends what changed (PATCH /api/my/settings); what is wrong is said
// at the part it is about. The first admin's settings are the server's (409): the
// section says so and opens Settings instead.

import { andList, byTestId, h, say, setText } from "../dom.js";
import { mcpTextarea, stateText } from "./mcp-settings.js";
import { mountMySecrets } from "./my-secrets.js";

/** A stored key as the server shows it; sent back, it keeps the key. */
const MASK = "***";
const KINDS = { chat: "Chat model", util: "Utility model", embed: "Embedding model" };
const PARTS = { model: "Model", api_base: "Provider address", api_key: "Key" };
const MODEL_FIELDS = Object.keys(KINDS).flatMap((kind) => Object.keys(PARTS).map((part) => `${kind}_${part}`));
/** How often the MCP servers' state is asked for while one of them is starting. */
const POLL_MS = 2000;
/** Shown in the empty box: a person's servers are remote ones. */
const REMOTE_EXAMPLE = `{
  "mcpServers": {
    "search": {
      "url": "https://example.com/mcp",
      "headers": { "Authorization": "Bearer §§secret(SEARCH_TOKEN)" }
    }
  }
}`;

export function mountMySettings(dialog, { me }) {
  const section = byTestId("my-settings", dialog);
  const part = (id) => byTestId(id, section);
  const form = part("my-settings-form");
  const loading = part("my-settings-loading");
  const loadError = part("my-settings-load-error");
  const servers = part("my-settings-server");
  const error = part("my-settings-error");
  const done = part("my-settings-done");
  const pending = part("my-settings-pending");
  const save = part("my-settings-save");
  const statusList = part("my-mcp-servers-status");
  const statusTitle = section.querySelector("#my-mcp-status-title");
  const modelsError = part("my-models-error");
  const mcpError = part("my-mcp-error");
  const secrets = mountMySecrets(form, { onChange: showPending });
  /** The server's last answer (what the form was filled from). */
  let view = null;
  /** The MCP JSON box (made anew from each answer). */
  let mcpBox = null;
  let pollTimer = null;

  function modelField(kind, name, label, current) {
    const id = `my-${kind}-${name}`;
    const field = `${kind}_${name}`;
    const key = name === "api_key";
    const input = h("input", {
      id, name: field, class: key ? "input" : "input mono", testid: `my-${field}`,
      type: key ? "password" : "text", autocomplete: key ? "new-password" : "off",
      autocapitalize: "off", spellcheck: "false", maxlength: name === "model" ? 200 : 2000,
      placeholder: name === "model" ? `the server's: ${current.server_models[kind] || "none"}`
        : key ? "the server's key" : "the server's address",
      "aria-describedby": "my-models-help my-models-error",
    });
    input.value = current.values[field] ?? "";
    if (key && input.value === MASK) input.title = "Saved: leave the dots to keep it; empty the field to use the server's key.";
    return h("div", { class: "field" }, h("label", { for: id }, label), input);
  }

  function showModels(current) {
    const help = part("my-models-help");
    const box = part("my-model-fields");
    if (!current.models_allowed) {
      const names = Object.entries(KINDS).map(([kind, title]) =>
        `${title.toLowerCase().replace(" model", "")} ${current.server_models[kind] || "none"}`);
      help.textContent = `Your admin decides which models your agents use (the server's: ${andList(names)}).`;
      box.replaceChildren();
      box.hidden = true;
      return;
    }
    help.textContent = "Leave a field empty to use the server's. A model of another provider needs that "
      + "provider's address and key too. A key you saved shows as three dots: leave them to keep it.";
    box.replaceChildren(...Object.entries(KINDS).map(([kind, title]) =>
      h("fieldset", { class: "my-model", testid: `my-model-${kind}` }, h("legend", {}, title),
        ...Object.entries(PARTS).map(([name, label]) => modelField(kind, name, label, current)))));
    box.hidden = false;
  }

  function showMcp(current) {
    const box = mcpTextarea({ id: "my-mcp-servers", name: "mcp_servers", testid: "my-mcp-servers" },
      current.values.mcp_servers);
    box.placeholder = REMOTE_EXAMPLE;
    box.rows = Math.min(14, Math.max(4, (current.values.mcp_servers || REMOTE_EXAMPLE).split("\n").length));
    box.setAttribute("aria-describedby", "my-mcp-help my-mcp-error");
    if (mcpBox) mcpBox.replaceWith(box);
    else part("my-mcp-field").append(box);
    mcpBox = box;
    const theirs = current.server_mcp_servers;
    part("my-server-mcp").textContent = theirs.length
      ? `The server's MCP servers your agents have too: ${andList(theirs)}. Yours need other names.`
      : "";
    showStatus(current);
  }

  function showStatus(current) {
    const shared = new Set(current.server_mcp_servers);
    statusList.replaceChildren(...current.mcp_status.map((server) =>
      h("li", { class: "mcp-server", testid: "my-mcp-server", data: { name: server.name, state: server.state } },
        h("div", { class: "mcp-server-head" },
          h("span", { class: "mcp-name" }, server.name),
          shared.has(server.name) ? h("span", { class: "mcp-transport" }, "the server's, with your secrets") : null),
        h("p", { class: "mcp-state", testid: "my-mcp-state" }, stateText(server)))));
    statusList.hidden = statusTitle.hidden = current.mcp_status.length === 0;
    poll(current);
  }

  /** Ask again while a server is starting, so the list says when it is ready or failed. */
  function poll(current) {
    clearTimeout(pollTimer);
    if (!dialog.open || !current.mcp_status.some((server) => server.state === "starting")) return;
    pollTimer = setTimeout(async () => {
      try {
        showStatus(await me.mySettings());
      } catch (err) {
        say(loadError, `Your MCP servers' state could not be read: ${err.message}`);
      }
    }, POLL_MS);
  }

  function show(current) {
    view = current;
    secrets.show(current);
    showModels(current);
    showMcp(current);
    clearErrors();
    showPending();
  }

  function changes() {
    const found = {};
    if (secrets.edited()) found.secrets = secrets.value();
    if (view.models_allowed) {
      for (const field of MODEL_FIELDS) {
        const value = form.elements[field].value.trim();
        if (value !== (view.values[field] ?? "")) found[field] = value;
      }
    }
    if (mcpBox.value !== view.values.mcp_servers) found.mcp_servers = mcpBox.value;
    return found;
  }

  /** Typed into the secret's fields but not added: Save adds it (a newcomer's usual way). */
  function secretTyped() {
    return Boolean(form.elements["my-secret-name"].value.trim() || form.elements["my-secret-value"].value);
  }

  function edited() {
    return Boolean(view) && !form.hidden && (Object.keys(changes()).length > 0 || secretTyped());
  }

  function showPending() {
    setText(pending, edited() ? "Not saved yet." : "");
  }

  function clearErrors() {
    say(error, "");
    secrets.say("");
    say(modelsError, "");
    say(mcpError, "");
    for (const input of form.querySelectorAll("[aria-invalid]")) {
      if (!input.closest(".my-secret-add")) input.removeAttribute("aria-invalid");
    }
  }

  /** The server's "field: what is wrong" said at the part it is about, its field marked. */
  function showError(err) {
    const found = /^([A-Za-z_]+)(?:\.[^:]*)?: ([\s\S]*)$/.exec(err.message);
    const field = found?.[1] ?? "";
    const words = found?.[2] ?? err.message;
    if (field === "secrets") {
      secrets.say(words);
    } else if (field === "mcp_servers") {
      say(mcpError, words);
      mcpBox.setAttribute("aria-invalid", "true");
      mcpBox.focus();
    } else if (MODEL_FIELDS.includes(field)) {
      const [kind, ...rest] = field.split("_");
      say(modelsError, `${KINDS[kind]}, ${PARTS[rest.join("_")].toLowerCase()}: ${words}`);
      form.elements[field].setAttribute("aria-invalid", "true");
      form.elements[field].focus();
    } else if (err.status === 403) {
      say(modelsError, err.message);
    } else {
      say(error, `Nothing was saved: ${err.message}`);
    }
  }

  form.addEventListener("input", showPending);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    done.textContent = "";
    if (secretTyped()) {
      part("my-secret-add").click();
      if (secretTyped()) return; // not added: what is wrong is said at the secret
    }
    const found = changes();
    if (Object.keys(found).length === 0) {
      done.textContent = "Nothing to save: you changed nothing.";
      return;
    }
    save.disabled = true;
    try {
      show(await me.changeMySettings(found));
      done.textContent = "mcp_servers" in found
        ? "Saved. Your agents use these from your next message on; your MCP servers start now."
        : "Saved. Your agents use these from your next message on.";
    } catch (err) {
      showError(err);
    } finally {
      save.disabled = false;
    }
  });

  part("my-settings-open-settings").addEventListener("click", () => {
    dialog.close();
    byTestId("settings-open").click();
  });

  function stop() {
    clearTimeout(pollTimer);
    pollTimer = null;
  }

  return {
    async open() {
      stop();
      view = null;
      form.hidden = true;
      servers.hidden = true;
      loading.hidden = false;
      say(loadError, "");
      done.textContent = "";
      try {
        const current = await me.mySettings();
        form.hidden = false;
        show(current);
      } catch (err) {
        if (err.status === 409) servers.hidden = false;
        else say(loadError, `Your settings could not be read: ${err.message}`);
      } finally {
        loading.hidden = true;
      }
    },
    /** Whether a change is not saved yet (Escape asks before throwing it away). */
    edited,
    close() {
      stop();
      secrets.reset();
      // Keys typed and not saved are not kept in the page.
      part("my-model-fields").replaceChildren();
      view = null;
    },
  };
}
