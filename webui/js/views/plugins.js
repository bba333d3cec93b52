// The Plugins panel (an admin's): every plugin with its parts, its state and its problems;
// switch one on or off for everyone, for a project or for an agent profile; install from a
// zip, a folder, or a git repository or a folder on the server; update, remove; its
// Python packages after a confirmation; its settings section; its own panel, a JS module
// it ships (`export function render(root)`), loaded from /plugins/<name>/webui/.

import { byTestId, h } from "../dom.js";
import { fetchJson, postJson } from "../http.js";
import { forgetLogRenderers } from "../plugin-renderers.js";
import { confirmDialog } from "./dialogs.js";

const PARTS = { tools: "tools", prompts: "prompts", agents: "agent profiles", skills: "skills",
  handlers: "run-event handlers", log_renderer: "a log-item view" };
const STATES = [["", "As everywhere"], ["on", "On"], ["off", "Off"]];
const url = (name, tail = "") => `/api/plugins/${encodeURIComponent(name)}${tail}`;

export function mountPlugins({ notices }) {
  const dialog = byTestId("plugins");
  const list = byTestId("plugins-list");
  const status = byTestId("plugins-status");
  const where = { project: byTestId("plugins-project"), profile: byTestId("plugins-profile") };

  const say = (text) => { status.textContent = text; };

  async function load() {
    forgetLogRenderers(); // a change here may bring or take one: asked again at the next item
    const query = new URLSearchParams({ project: where.project.value, profile: where.profile.value });
    try {
      const data = await fetchJson(`/api/plugins?${query}`);
      const usable = data.plugins.filter((p) => p.usable).length;
      say(data.plugins.length ? `${usable} of ${data.plugins.length} plugins can be used.`
        : "No plugins yet. Install one from a zip, a folder or a repository.");
      list.replaceChildren(...data.plugins.map(row));
      showExtensions(data.extensions || []);
    } catch (err) {
      notices.error(err, "Plugins");
    }
  }

  function showExtensions(found) {
    // Agent Zero extensions the chosen profile meets, each with whether and when it runs.
    const section = byTestId("plugins-extensions");
    section.hidden = !found.length;
    byTestId("plugins-extensions-list").replaceChildren(...found.map((e) =>
      h("li", { class: `extension-item${e.runs ? "" : " not-run"}`, testid: "extension-item" },
        h("code", { class: "extension-file" }, e.file),
        h("span", { class: "extension-state", testid: "extension-state" },
          e.runs ? `${e.point}: runs at ${e.words}.` : `${e.point}: not run, ${e.words}.`))));
  }

  async function fillChoices() {
    const [projects, profiles] = await Promise.all([
      fetchJson("/api/projects").catch(() => ({ projects: [] })),
      fetchJson("/api/profiles").catch(() => []),
    ]);
    const fill = (select, names, none) => {
      const kept = select.value;
      select.replaceChildren(h("option", { value: "" }, none), ...names.map((n) => h("option", { value: n }, n)));
      select.value = names.includes(kept) ? kept : "";
    };
    fill(where.project, projects.projects.map((p) => p.name), "No project");
    fill(where.profile, profiles.map((p) => p.name), "No profile");
  }

  function row(plugin) {
    const label = `${plugin.title}${plugin.version ? ` ${plugin.version}` : ""}`;
    const on = h("input", { type: "checkbox", testid: "plugin-on", checked: plugin.on,
      disabled: !plugin.usable, "aria-label": `${plugin.title} on for everyone` });
    on.addEventListener("change", () => switchIt(plugin, "global", on.checked));
    const parts = [...plugin.parts, ...(plugin.log_renderer ? ["log_renderer"] : [])]
      .map((p) => PARTS[p] || p);
    const item = h("li", { class: `plugin-item${plugin.usable ? "" : " broken"}`, testid: "plugin-item",
      data: { name: plugin.name } },
      h("div", { class: "plugin-line" },
        h("label", { class: "plugin-switch" }, on, h("span", { class: "plugin-name" }, label)),
        h("span", { class: "plugin-source", testid: "plugin-source" },
          plugin.source === "shipped" ? "Built in" : "Installed", plugin.on_here === plugin.on ? ""
            : plugin.on_here ? " · on here" : " · off here"),
        actions(plugin)),
      plugin.description ? h("p", { class: "plugin-description" }, plugin.description) : null,
      parts.length ? h("p", { class: "plugin-parts" }, `Brings: ${parts.join(", ")}.`) : null,
      plugin.error ? h("p", { class: "error-text", testid: "plugin-error" }, `Cannot be used: ${plugin.error}`) : null,
      plugin.not_supported.length ? h("p", { class: "plugin-note", testid: "plugin-not-supported" },
        `Not supported in Cadre, left unused: ${plugin.not_supported.map((f) => `${f}/`).join(", ")}.`) : null,
      plugin.unused.length ? h("p", { class: "plugin-note" },
        `Not used by Cadre: ${plugin.unused.join(", ")}.`) : null,
      plugin.mcp_servers.length ? h("p", { class: "plugin-note" },
        `MCP servers it adds while on for everyone: ${plugin.mcp_servers.join(", ")}.`) : null,
      problems(plugin), scoped(plugin), packages(plugin), settingsForm(plugin),
      plugin.panel ? h("div", { class: "plugin-panel", testid: "plugin-panel" }) : null);
    if (plugin.panel) loadPanel(plugin, item.querySelector("[data-testid=plugin-panel]"));
    return item;
  }

  function actions(plugin) {
    const box = h("div", { class: "plugin-actions" });
    if (plugin.removable && ["git", "folder"].includes(plugin.origin)) {
      box.append(button("Update", "plugin-update", plugin, () => update(plugin)));
    }
    if (plugin.removable) box.append(button("Remove", "plugin-remove", plugin, () => remove(plugin), "danger"));
    return box;
  }

  function button(text, testid, plugin, onclick, kind = "") {
    return h("button", { type: "button", class: `btn small ${kind}`, testid, onclick,
      "aria-label": `${text} ${plugin.title}` }, text);
  }

  function problems(plugin) {
    if (!plugin.problems.length) return null;
    return h("details", { class: "plugin-problems", testid: "plugin-problems", open: true },
      h("summary", {}, `Problems while it ran (${plugin.problems.length})`),
      h("ul", {}, ...plugin.problems.map((p) => h("li", {}, `${p.where}: ${p.error}`))));
  }

  function scoped(plugin) {
    const controls = [];
    for (const scope of ["project", "profile"]) {
      const name = where[scope].value;
      if (!name || !plugin.usable) continue;
      const said = plugin.switches[scope];
      const select = h("select", { class: "input", testid: `plugin-${scope}-state`,
        "aria-label": `${plugin.title} in ${scope} ${name}` },
        ...STATES.map(([value, text]) => h("option", { value }, text)));
      select.value = said === true ? "on" : said === false ? "off" : "";
      select.addEventListener("change", () => switchIt(plugin, scope,
        select.value === "" ? null : select.value === "on", name));
      controls.push(h("label", { class: "plugin-scope" }, `In ${scope} ${name}: `, select));
    }
    return controls.length ? h("div", { class: "plugin-scopes" }, ...controls) : null;
  }

  function packages(plugin) {
    const missing = plugin.dependencies.filter((d) => !d.installed).map((d) => d.requirement);
    if (!missing.length) return null;
    return h("p", { class: "plugin-note" }, `Needs Python packages: ${missing.join(", ")}. `,
      button("Install packages", "plugin-packages", plugin, () => installPackages(plugin)));
  }

  function settingsForm(plugin) {
    const { fields, error } = plugin.settings;
    if (error) return h("p", { class: "error-text" }, `Its settings cannot be shown: ${error}`);
    if (!fields.length) return null;
    const inputs = {};
    const rows = fields.map((f) => {
      const id = `plugin-${plugin.name}-${f.name}`;
      const input = f.type === "boolean" ? h("input", { type: "checkbox", id, checked: Boolean(f.value) })
        : f.type === "choice" ? h("select", { class: "input", id },
          ...Object.entries(f.options).map(([v, t]) => h("option", { value: v, selected: v === f.value }, t)))
          : h("input", { class: "input", id, type: ["number", "integer"].includes(f.type) ? "number" : "text",
            value: f.value ?? "", "aria-describedby": `${id}-hint` });
      inputs[f.name] = [f, input];
      return h("div", { class: "plugin-field" }, h("label", { for: id }, f.title, f.unit ? ` (${f.unit})` : ""),
        input, f.description ? h("small", { class: "muted", id: `${id}-hint` }, f.description) : null);
    });
    const form = h("form", { class: "plugin-settings", testid: "plugin-settings",
      "aria-label": `${plugin.title} settings` }, ...rows,
    h("button", { type: "submit", class: "btn small" }, "Save settings"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const values = {};
      for (const [name, [f, input]] of Object.entries(inputs)) {
        values[name] = f.type === "boolean" ? input.checked
          : ["number", "integer"].includes(f.type) ? Number(input.value) : input.value;
      }
      try {
        await postJson(url(plugin.name, "/settings"), { values });
        notices.push({ title: "Settings saved", message: plugin.title, type: "success" });
      } catch (err) {
        notices.error(err, `${plugin.title} settings`);
      }
    });
    return form;
  }

  async function loadPanel(plugin, root) {
    try {
      const module = await import(plugin.panel);
      module.render?.(root, { plugin });
    } catch (err) {
      root.replaceChildren(h("p", { class: "error-text" }, `Its panel could not be shown: ${err.message}`));
    }
  }

  async function switchIt(plugin, scope, on, name = "") {
    try {
      await postJson(url(plugin.name, "/switch"), { on, scope, [scope]: name });
      await load();
    } catch (err) {
      notices.error(err, "Switch failed");
    }
  }

  async function update(plugin) {
    say(`Updating ${plugin.title}…`);
    try {
      await postJson(url(plugin.name, "/update"), {});
      notices.push({ title: "Plugin updated", message: plugin.title, type: "success" });
      await load();
    } catch (err) {
      say(`Not updated: ${err.message}`);
    }
  }

  async function remove(plugin) {
    const yes = await confirmDialog(`Remove the plugin “${plugin.title}”?`,
      "Its folder and its switches are removed. This cannot be undone.", { okLabel: "Remove", danger: true });
    if (!yes) return;
    try {
      await postJson(url(plugin.name, "/delete"), {});
      notices.push({ title: "Plugin removed", message: plugin.title, type: "success" });
      await load();
      dialog.focus();
    } catch (err) {
      notices.error(err, "Remove failed");
    }
  }

  async function installPackages(plugin) {
    try {
      await postJson(url(plugin.name, "/dependencies"), { confirm: false });
      return;
    } catch (err) {
      if (err.status !== 409) return notices.error(err, "Packages");
      const yes = await confirmDialog("Install Python packages?",
        `${err.message}. pip installs them into Cadre's own environment.`, { okLabel: "Install" });
      if (!yes) return;
    }
    say("Installing packages…");
    try {
      const done = await postJson(url(plugin.name, "/dependencies"), { confirm: true });
      notices.push({ title: "Packages installed", message: done.installed.join(", "), type: "success" });
      await load();
    } catch (err) {
      say(`Packages not installed: ${err.message}`);
    }
  }

  /** Send the install; when the name is taken, ask whether to replace it and send again. */
  async function install(send) {
    say("Installing…");
    try {
      let result;
      try {
        result = await send(false);
      } catch (err) {
        if (err.status !== 409) throw err;
        const yes = await confirmDialog("Replace the installed plugin?", err.message, { okLabel: "Replace", danger: true });
        if (!yes) return say("Nothing was installed.");
        result = await send(true);
      }
      notices.push({ title: "Plugin installed", message: result.plugin.title, type: "success" });
      await load();
    } catch (err) {
      say(`Nothing was installed: ${err.message}`);
    }
  }

  const formWith = (fill) => (replace) => {
    const form = new FormData();
    fill(form);
    if (replace) form.append("replace", "1");
    return fetchJson("/api/plugins/install", { method: "POST", body: form });
  };
  const zipInput = byTestId("plugins-install-zip");
  zipInput.addEventListener("change", () => {
    const file = zipInput.files[0];
    zipInput.value = "";
    if (file) install(formWith((form) => form.append("archive", file, file.name)));
  });
  const folderInput = byTestId("plugins-install-folder");
  folderInput.addEventListener("change", () => {
    const files = [...folderInput.files];
    folderInput.value = "";
    if (files.length) install(formWith((form) => {
      for (const file of files) form.append("files", file, file.webkitRelativePath || file.name);
    }));
  });
  byTestId("plugins-source-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const source = byTestId("plugins-source").value.trim();
    if (source) install((replace) => postJson("/api/plugins/install", { source, replace }));
  });
  for (const select of Object.values(where)) select.addEventListener("change", load);
  byTestId("plugins-open").addEventListener("click", async () => {
    dialog.showModal();
    await fillChoices();
    load();
  });
  byTestId("plugins-close").addEventListener("click", () => dialog.close());
}
