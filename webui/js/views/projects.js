// The Projects panel: every project with its number of chats and work folder; a new
// chat in one; create and edit one in a form (name, description, instructions, work
// folder, memory area, Agent 0's profile, profiles not used, secrets); delete after
// asking (the server refuses while chats belong to it, and says how many).

import { byTestId, h } from "../dom.js";
import { confirmDialog } from "./dialogs.js";

/** "NAME=value" lines → {NAME: value}; a line without "=" is an error the form shows. */
function parseSecrets(text) {
  const found = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.indexOf("=");
    if (at < 1) throw new Error(`secret line “${line}”: write NAME=value`);
    found[line.slice(0, at).trim()] = line.slice(at + 1);
  }
  return found;
}

export function mountProjects({ projects, chats, notices }) {
  const dialog = byTestId("projects");
  const list = byTestId("projects-list");
  const status = byTestId("projects-status");
  const form = byTestId("project-form");
  const field = (id) => byTestId(id, form);
  const name = field("project-name");
  const workDir = field("project-work-dir");
  const errorBox = field("project-error");
  let editing = null; // the project being edited (null: a new one)
  let removed = new Set(); // secret names to remove on save
  let opener = null;

  function say(text) {
    status.textContent = text;
  }

  const EMPTY = "No projects yet. Make one with New project.";

  function render() {
    const all = projects.projects;
    // A fresh list leaves what an action said in view (a refused delete, say): the list
    // may come back after the action's answer. The status is cleared on opening instead.
    if (!all.length) say(EMPTY);
    else if (status.textContent === EMPTY) say("");
    list.replaceChildren(...all.map(row));
  }

  function row(project) {
    const count = project.chats === 1 ? "1 chat" : `${project.chats} chats`;
    const start = h("button", { type: "button", class: "btn small", testid: "project-start",
      "aria-label": `New chat in ${project.name}` }, "New chat");
    const edit = h("button", { type: "button", class: "btn small", testid: "project-edit",
      "aria-label": `Edit ${project.name}` }, "Edit");
    const remove = h("button", { type: "button", class: "btn small danger", testid: "project-delete",
      "aria-label": `Delete ${project.name}` }, "Delete");
    start.addEventListener("click", () => startChat(project));
    edit.addEventListener("click", () => openForm(project, edit));
    remove.addEventListener("click", () => removeProject(project));
    return h("li", { class: "project-item", testid: "project-item", data: { name: project.name } },
      h("div", { class: "project-line" },
        h("span", { class: "project-name" }, project.name),
        h("span", { class: "project-count", testid: "project-chats" }, count),
        h("div", { class: "project-actions" }, start, edit, remove)),
      project.description ? h("p", { class: "project-description" }, project.description) : null,
      h("p", { class: "project-folder" }, `Works in ${project.work_folder}`));
  }

  async function startChat(project) {
    try {
      dialog.close();
      // The chat list keeps showing what it showed (all chats, say): only a list of another
      // project's chats, where the new one would not be, shows all of them again.
      if (projects.shown && projects.shown !== project.name) projects.show("");
      await chats.create(project.name);
      projects.emit("chat-started", project.name);
    } catch (err) {
      notices.error(err, "New chat");
    }
  }

  async function removeProject(project) {
    const ok = await confirmDialog(`Delete project “${project.name}”?`,
      "Its settings, secrets, knowledge and own work folder are deleted. A folder you named stays. " +
      "A project that still has chats is not deleted.", { okLabel: "Delete", danger: true });
    if (!ok) return;
    try {
      await projects.remove(project.name);
      say(`Project ${project.name} deleted.`);
    } catch (err) {
      say(err.message);
      notices.error(err, "Delete project");
    }
  }

  async function fillProfiles(project) {
    const select = field("project-profile");
    const box = field("project-disabled");
    // Nothing of the form shown before stays while this project's profiles are asked for.
    select.replaceChildren();
    box.replaceChildren();
    const off = new Set(project?.disabled_agents || []);
    let found = [];
    try {
      found = await projects.profiles(project ? project.name : null, [...off]);
    } catch (err) {
      notices.error(err, "Profiles");
    }
    const usable = found.filter((p) => p.available);
    select.replaceChildren(h("option", { value: "" }, "The default (Settings)"),
      ...usable.map((p) => h("option", { value: p.name }, `${p.title} (${p.name})`)));
    select.value = project?.agent_profile || "";
    box.replaceChildren(...found.map((p) => h("label", { class: "field check" },
      h("input", { type: "checkbox", value: p.name, checked: off.has(p.name) }), ` ${p.title}`)));
  }

  function showSecretNames(names) {
    field("project-secret-names").replaceChildren(...names.map((secret) => {
      const drop = h("button", { type: "button", class: "link-btn", "aria-label": `Remove secret ${secret}` },
        "remove");
      const item = h("li", { testid: "project-secret" }, h("code", {}, secret), " ", drop);
      drop.addEventListener("click", () => {
        removed.add(secret);
        item.remove();
      });
      return item;
    }));
  }

  function setWork(named) {
    field(named ? "project-work-named" : "project-work-own").checked = true;
    workDir.disabled = !named;
  }

  async function openForm(project, from) {
    editing = project;
    opener = from;
    say("");
    removed = new Set();
    form.hidden = false;
    list.hidden = true;
    clearProblems();
    field("project-form-title").textContent = project ? `Edit ${project.name}` : "New project";
    name.value = project?.name || "";
    name.disabled = Boolean(project);
    field("project-description").value = project?.description || "";
    field("project-instructions").value = project?.instructions || "";
    field("project-memory").value = project?.memory_area || "";
    workDir.value = project && !project.own_work_folder ? project.work_folder : "";
    setWork(Boolean(project && !project.own_work_folder));
    field("project-secrets").value = "";
    showSecretNames(project?.secrets || []);
    field("project-folders").textContent = project
      ? `Knowledge files: ${project.knowledge_folder}` : "";
    // Focus now, not after the profiles arrive: typing must not jump fields meanwhile.
    (project ? field("project-description") : name).focus();
    await fillProfiles(project);
  }

  function closeForm() {
    form.hidden = true;
    list.hidden = false;
    opener?.focus();
  }

  function fields() {
    const secrets = parseSecrets(field("project-secrets").value);
    for (const secret of removed) if (!(secret in secrets)) secrets[secret] = null;
    const named = field("project-work-named").checked;
    if (named && !workDir.value.trim()) throw new Error("Work folder: give the folder's full path.");
    return {
      description: field("project-description").value.trim(),
      instructions: field("project-instructions").value,
      memory_area: field("project-memory").value.trim(),
      work_dir: named ? workDir.value.trim() : "",
      agent_profile: field("project-profile").value,
      disabled_agents: [...field("project-disabled").querySelectorAll("input:checked")].map((i) => i.value),
      secrets,
    };
  }

  /** The fields a problem can be about: its input and the element that says it. */
  const FIELD_PROBLEMS = [
    { test: /project name|a project named|project a name|^name:/i, input: name, box: field("project-name-error") },
    { test: /work folder|work_dir/i, input: workDir, box: field("project-work-error") },
  ];

  function clearProblems() {
    errorBox.hidden = true;
    for (const { input, box } of FIELD_PROBLEMS) {
      box.hidden = true;
      input.removeAttribute("aria-invalid");
      input.setAttribute("aria-describedby", input.getAttribute("aria-describedby")
        ?.split(" ").filter((id) => id !== box.id).join(" ") || "");
      if (!input.getAttribute("aria-describedby")) input.removeAttribute("aria-describedby");
    }
  }

  /** Say what is wrong next to the field it is about (marked, and focused), else below
   * the form, brought into view (it sat below the fold, the field unmarked). */
  function showProblem(text) {
    const about = FIELD_PROBLEMS.find(({ test, input }) => test.test(text) && !input.disabled);
    if (!about) {
      errorBox.textContent = text;
      errorBox.hidden = false;
      errorBox.scrollIntoView({ block: "nearest" });
      return;
    }
    const { input, box } = about;
    box.textContent = text;
    box.hidden = false;
    input.setAttribute("aria-invalid", "true");
    const described = (input.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
    input.setAttribute("aria-describedby", [...described, box.id].join(" "));
    input.focus();
    input.scrollIntoView({ block: "nearest" });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearProblems();
    try {
      if (!editing && !name.value.trim()) throw new Error("Give the project a name.");
      const data = fields();
      if (editing) await projects.update(editing.name, data);
      else await projects.create({ name: name.value.trim(), ...data });
      say(`Project ${editing ? editing.name : name.value.trim()} saved.`);
      closeForm();
    } catch (err) {
      showProblem(err.message);
    }
  });
  form.addEventListener("change", (event) => {
    if (event.target.name === "project-work") setWork(event.target.value === "named");
  });
  field("project-cancel").addEventListener("click", closeForm);
  byTestId("project-new").addEventListener("click", (event) => openForm(null, event.currentTarget));

  projects.on("list", render);
  byTestId("projects-open").addEventListener("click", () => {
    form.hidden = true;
    list.hidden = false;
    say("");
    dialog.showModal();
    projects.load().catch((err) => notices.error(err, "Projects"));
  });
  byTestId("projects-close").addEventListener("click", () => dialog.close());
}
