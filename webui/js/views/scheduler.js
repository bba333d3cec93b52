// The Scheduler panel: every task with its state (next run, last run and its answer or
// error), a form to create or edit one, and enable/disable, Run now, Open chat, Delete.
// While the panel is open it asks for the tasks again every few seconds: runs end on
// their own.

import { byTestId, h } from "../dom.js";
import { hashOf } from "../router.js";
import { SchedulerStore, specOf } from "../stores/scheduler.js";
import { confirmDialog } from "./dialogs.js";

const REFRESH_MS = 3000;
const KINDS = { scheduled: "Schedule", planned: "Planned", adhoc: "On demand" };
// How a last run ended, as its summary says it ("error" and anything else: failed).
const ENDED = { success: "answered", interrupted: "cut short (Cadre stopped)" };

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

function timing(task) {
  const zone = task.timezone ? ` (${task.timezone})` : "";
  if (task.kind === "scheduled") return `cron ${task.cron}${zone}`;
  if (task.kind === "planned") return `${task.at.length} planned time${task.at.length === 1 ? "" : "s"}${zone}`;
  return "runs when you press Run now";
}

export function mountScheduler({ notices }) {
  const store = new SchedulerStore();
  const dialog = byTestId("scheduler");
  const list = byTestId("task-list");
  const status = byTestId("scheduler-status");
  const form = byTestId("task-form");
  const error = byTestId("task-error");
  const field = (name) => byTestId(`task-${name}`);
  let editing = null; // the task being edited; null: a new one
  let timer = null;

  async function load() {
    try {
      render(await store.list());
    } catch (err) {
      status.textContent = `Could not load the tasks: ${err.message}`;
    }
  }

  function render(tasks) {
    status.textContent = tasks.length ? "" : "No tasks yet. Press New task to make one.";
    list.replaceChildren(...tasks.map(row));
  }

  function row(task) {
    const button = (label, testid, action, extra = {}) => h("button", {
      type: "button", class: `btn small${extra.danger ? " danger" : ""}`, testid,
      "aria-label": `${label}: ${task.name}`, disabled: extra.disabled, onclick: action,
    }, label);
    const toggle = h("input", { type: "checkbox", testid: "task-toggle", checked: task.enabled,
      "aria-label": `Enabled: ${task.name}`, onchange: (e) => change(task, { enabled: e.target.checked }) });
    const state = task.running ? "Running now…"
      : task.next_run ? `Next run: ${when(task.next_run)}` : task.enabled ? "No run planned" : "Disabled";
    const last = task.last_status ? h("details", { class: `task-last ${task.last_status}`, testid: "task-last" },
      h("summary", {}, `Last run ${when(task.last_run)}: ${ENDED[task.last_status] ?? "failed"}`),
      h("p", { class: "task-result", testid: "task-result" }, task.last_result)) : null;
    return h("li", { class: "task-item", testid: "task-item", data: { id: task.id } },
      h("div", { class: "task-line" },
        h("label", { class: "task-enabled" }, toggle),
        h("span", { class: "task-name" }, task.name),
        h("span", { class: "task-kind" }, `${KINDS[task.kind]} · ${timing(task)}`)),
      h("p", { class: "task-state", testid: "task-state" }, state),
      last,
      h("div", { class: "task-actions" },
        button("Run now", "task-run", () => run(task), { disabled: task.running }),
        button("Edit", "task-edit", () => openForm(task)),
        task.chat_id ? button("Open chat", "task-chat-open", () => openChat(task)) : null,
        button("Delete", "task-delete", () => remove(task), { danger: true })));
  }

  async function change(task, patch) {
    try {
      await store.update(task.id, patch);
    } catch (err) {
      notices.error(err, `Task ${task.name}`);
    }
    await load();
  }

  async function run(task) {
    try {
      await store.run(task.id);
      notices.push({ title: "Task started", message: task.name, type: "info" });
    } catch (err) {
      notices.error(err, `Task ${task.name}`);
    }
    await load();
  }

  function openChat(task) {
    dialog.close();
    location.hash = hashOf(task.chat_id);
  }

  async function remove(task) {
    const yes = await confirmDialog(`Delete the task “${task.name}”?`,
      "It will not run again. Its chats stay.", { okLabel: "Delete", danger: true });
    if (!yes) return;
    try {
      await store.remove(task.id);
    } catch (err) {
      notices.error(err, "Delete failed");
    }
    await load();
  }

  function showKind() {
    const kind = field("kind").value;
    for (const el of form.querySelectorAll("[data-kind]")) el.hidden = !el.dataset.kind.split(" ").includes(kind);
  }

  function openForm(task = null) {
    editing = task;
    const t = task || { name: "", prompt: "", kind: "scheduled", cron: "", at: [], timezone: "",
      profile: "", project: "", dedicated_chat: true, run_missed: true, enabled: true };
    byTestId("task-form-title").textContent = task ? `Edit “${task.name}”` : "New task";
    for (const name of ["name", "prompt", "kind", "cron", "timezone"]) field(name).value = t[name];
    field("profile").value = t.profile;
    chooseProject(t.project || "");
    field("at").value = t.at.map((iso) => new Date(iso).toISOString().slice(0, 16) + "Z").join("\n");
    field("chat").value = t.dedicated_chat ? "dedicated" : "new";
    field("missed").checked = t.run_missed;
    field("enabled").checked = t.enabled;
    error.textContent = "";
    showKind();
    list.hidden = true;
    form.hidden = false;
    field("name").focus();
  }

  function closeForm() {
    form.hidden = true;
    list.hidden = false;
    editing = null;
  }

  async function save(event) {
    event.preventDefault();
    const { spec, problem } = specOf({
      name: field("name").value, prompt: field("prompt").value, kind: field("kind").value,
      cron: field("cron").value, at: field("at").value, timezone: field("timezone").value,
      profile: field("profile").value, project: field("project").value,
      dedicated_chat: field("chat").value === "dedicated", run_missed: field("missed").checked,
      enabled: field("enabled").checked,
    });
    if (problem) {
      error.textContent = problem;
      return;
    }
    try {
      if (editing) await store.update(editing.id, spec);
      else await store.create(spec);
    } catch (err) {
      error.textContent = err.message; // the server names the field and what is wrong
      return;
    }
    closeForm();
    await load();
  }

  /** The project menu on `name`; a project gone since the task was made is kept, marked. */
  function chooseProject(name) {
    const menu = field("project");
    if (name && ![...menu.options].some((o) => o.value === name)) {
      menu.append(h("option", { value: name }, `${name} (not found)`));
    }
    menu.value = name;
  }

  async function fillChoices() {
    const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
    document.getElementById("task-zones").replaceChildren(...zones.map((z) => h("option", { value: z })));
    try {
      const profiles = await store.profiles();
      field("profile").replaceChildren(h("option", { value: "" }, "Default"),
        ...profiles.map((p) => h("option", { value: p.name }, p.title || p.name)));
    } catch (err) {
      notices.error(err, "Profiles");
    }
    try {
      const chosen = field("project").value;
      const names = await store.projects();
      field("project").replaceChildren(h("option", { value: "" }, "No project"),
        ...names.map((name) => h("option", { value: name }, name)));
      chooseProject(chosen);
    } catch (err) {
      notices.error(err, "Projects");
    }
  }

  field("kind").addEventListener("change", showKind);
  form.addEventListener("submit", save);
  byTestId("task-cancel").addEventListener("click", closeForm);
  byTestId("task-new").addEventListener("click", () => openForm());
  byTestId("scheduler-open").addEventListener("click", () => {
    closeForm();
    dialog.showModal();
    fillChoices();
    load();
    timer = setInterval(() => { if (form.hidden) load(); }, REFRESH_MS);
  });
  byTestId("scheduler-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => clearInterval(timer));
}
