// The skills panel: every skill with where it comes from (and why one cannot be used);
// one skill's instructions and files; import a zip or a folder into the asker's skills
// folder (an admin's: the shared usr/skills, for everyone; a member's: their own, for their
// agents alone); delete a skill of that folder after asking.

import { byTestId, h } from "../dom.js";
import { fetchJson } from "../http.js";
import { confirmDialog } from "./dialogs.js";

const SOURCES = { shipped: "Built in", own: "Yours" };

/** With accounts the page has a role (views/account.js): usr/skills is everyone's then. */
const withAccounts = () => Boolean(document.documentElement.dataset.role);

function sourceLabel(source) {
  if (source === "user") return withAccounts() ? "Shared" : "Yours";
  if (SOURCES[source]) return SOURCES[source];
  const [kind, name] = source.split(":");
  return kind === "profile" ? `Profile ${name}` : kind === "project" ? `Project ${name}` : source;
}

function size(bytes) {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(bytes < 10240 ? 1 : 0)} KB`;
}

export function mountSkills({ notices }) {
  const dialog = byTestId("skills");
  const list = byTestId("skills-list");
  const status = byTestId("skills-status");
  const view = byTestId("skill-view");
  const zipInput = byTestId("skills-import-zip");
  const folderInput = byTestId("skills-import-folder");
  let opener = null; // the row's View button, focused again on the way back

  function say(text) {
    status.textContent = text;
  }

  async function load() {
    try {
      const data = await fetchJson("/api/skills");
      render(data.skills, data.shared);
    } catch (err) {
      notices.error(err, "Skills");
    }
  }

  function render(skills, shared) {
    showList();
    const usable = skills.filter((s) => s.usable).length;
    // Where an import goes, once there are people to tell apart.
    const into = !withAccounts() ? ""
      : shared ? " Imports are shared: every person's agents are offered them."
        : " Imports are yours alone: only your agents are offered them.";
    say((skills.length ? `${usable} of ${skills.length} skills can be used.` : "No skills yet. Import a zip or a folder.") + into);
    list.replaceChildren(...skills.map(row));
  }

  function row(skill) {
    const viewButton = h("button", { type: "button", class: "btn small", testid: "skill-view-open",
      "aria-label": `View ${skill.name}` }, "View");
    const actions = h("div", { class: "skill-actions" }, viewButton);
    if (skill.deletable) {
      const remove = h("button", { type: "button", class: "btn small danger", testid: "skill-delete",
        "aria-label": `Delete ${skill.name}` }, "Delete");
      remove.addEventListener("click", () => removeSkill(skill, remove));
      actions.append(remove);
    }
    viewButton.addEventListener("click", () => show(skill.name, viewButton));
    const overrides = skill.overrides.length ? ` · replaces ${skill.overrides.map(sourceLabel).join(", ")}` : "";
    const state = !skill.enabled ? " · turned off in its SKILL.md" : "";
    return h("li", { class: `skill-item${skill.usable ? "" : " broken"}`, testid: "skill-item", data: { name: skill.name } },
      h("div", { class: "skill-line" },
        h("span", { class: "skill-name" }, skill.name),
        h("span", { class: "skill-source", testid: "skill-source" }, sourceLabel(skill.source) + overrides + state),
        actions),
      skill.description ? h("p", { class: "skill-description" }, skill.description) : null,
      skill.problem ? h("p", { class: "error-text", testid: "skill-problem" }, `Cannot be used: ${skill.problem}`) : null,
      ...skill.warnings.map((w) => h("p", { class: "skill-warning" }, `Note: ${w}`)));
  }

  async function show(name, from) {
    try {
      const skill = await fetchJson(`/api/skills/${encodeURIComponent(name)}`);
      opener = from;
      byTestId("skill-view-title").textContent = skill.name;
      const facts = [sourceLabel(skill.source), skill.folder];
      if (skill.license) facts.push(`License: ${skill.license}`);
      if (skill.compatibility) facts.push(skill.compatibility);
      for (const [key, value] of Object.entries(skill.metadata)) facts.push(`${key}: ${value}`);
      byTestId("skill-view-meta").textContent = facts.join(" · ");
      byTestId("skill-instructions").textContent = skill.problem
        ? `This skill cannot be used: ${skill.problem}` : skill.instructions || "(no instructions)";
      const files = skill.files.map((f) => h("li", {}, h("code", {}, f.path), ` ${size(f.size)}`));
      if (skill.more_files) files.push(h("li", { class: "muted" }, "… and more"));
      byTestId("skill-files").replaceChildren(...files);
      list.hidden = true;
      status.hidden = true;
      view.hidden = false;
      byTestId("skill-back").focus();
    } catch (err) {
      notices.error(err, "Skills");
    }
  }

  function showList() {
    view.hidden = true;
    list.hidden = false;
    status.hidden = false;
  }

  async function removeSkill(skill, button) {
    const yes = await confirmDialog(`Delete the skill “${skill.name}”?`,
      "Its folder and every file in it are removed. This cannot be undone.",
      { okLabel: "Delete", danger: true });
    if (!yes) {
      button.focus();
      return;
    }
    try {
      await fetchJson(`/api/skills/${encodeURIComponent(skill.name)}/delete`, { method: "POST" });
      notices.push({ title: "Skill deleted", message: skill.name, type: "success" });
      await load();
      dialog.focus();
    } catch (err) {
      notices.error(err, "Delete failed");
    }
  }

  /** Send the form; when a name is taken, ask whether to replace it and send again. */
  async function upload(makeForm) {
    const send = (replace) => {
      const form = makeForm();
      if (replace) form.append("replace", "1");
      return fetchJson("/api/skills/import", { method: "POST", body: form });
    };
    say("Importing…");
    try {
      let result;
      try {
        result = await send(false);
      } catch (err) {
        if (err.status !== 409) throw err; // 409: a name is installed already
        const yes = await confirmDialog("Replace installed skills?",
          `${err.message.split(".")[0]}. Replacing removes the files they have now.`,
          { okLabel: "Replace", danger: true });
        if (!yes) {
          say("Nothing was imported.");
          return;
        }
        result = await send(true);
      }
      const skipped = result.skipped.length ? ` (${result.skipped.length} files outside any skill left out)` : "";
      notices.push({ title: "Skills imported", message: result.imported.join(", ") + skipped, type: "success" });
      await load();
    } catch (err) {
      say(`Nothing was imported: ${err.message}`);
      notices.error(err, "Import failed");
    }
  }

  zipInput.addEventListener("change", () => {
    const file = zipInput.files[0];
    zipInput.value = "";
    if (!file) return;
    upload(() => {
      const form = new FormData();
      form.append("archive", file, file.name);
      return form;
    });
  });
  folderInput.addEventListener("change", () => {
    const files = [...folderInput.files];
    folderInput.value = "";
    if (!files.length) return;
    upload(() => {
      const form = new FormData();
      // The path inside the chosen folder names each file (the browser's own name is bare).
      for (const file of files) form.append("files", file, file.webkitRelativePath || file.name);
      return form;
    });
  });

  byTestId("skills-open").addEventListener("click", () => {
    dialog.showModal();
    load();
  });
  byTestId("skills-close").addEventListener("click", () => dialog.close());
  byTestId("skill-back").addEventListener("click", () => {
    showList();
    opener?.focus();
  });
}
