// The Scheduler panel's data: the tasks as the server keeps them, and what can be done
// to them (routes /api/tasks, the same as the external API's /api/v1/tasks).

import { fetchJson } from "../http.js";

const BASE = "/api/tasks";
const JSON_HEADERS = { "Content-Type": "application/json" };

function one(taskId) {
  return `${BASE}/${encodeURIComponent(taskId)}`;
}

export class SchedulerStore {
  /** Every task, oldest first. */
  async list() {
    return (await fetchJson(BASE)).tasks;
  }

  create(spec) {
    return fetchJson(BASE, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(spec) });
  }

  update(taskId, patch) {
    return fetchJson(one(taskId), { method: "PATCH", headers: JSON_HEADERS, body: JSON.stringify(patch) });
  }

  remove(taskId) {
    return fetchJson(one(taskId), { method: "DELETE" });
  }

  run(taskId) {
    return fetchJson(`${one(taskId)}/run`, { method: "POST" });
  }

  /** The projects' names, for the task's project menu. */
  async projects() {
    return (await fetchJson("/api/projects")).projects.map((p) => p.name);
  }

  /** Agent 0's profiles a task may use: [{name, title}]. */
  async profiles() {
    return (await fetchJson("/api/profiles")).filter((p) => p.available);
  }
}

/** The form's fields as the task to send, or {problem} in plain words. */
export function specOf(form) {
  const spec = {
    name: form.name.trim(), prompt: form.prompt.trim(), kind: form.kind,
    timezone: form.timezone.trim(), profile: form.profile, project: form.project,
    dedicated_chat: form.dedicated_chat, run_missed: form.run_missed, enabled: form.enabled,
    cron: "", at: [],
  };
  if (!spec.name) return { problem: "Give the task a name." };
  if (!spec.prompt) return { problem: "Write the prompt Agent 0 gets on each run." };
  if (spec.kind === "scheduled") spec.cron = form.cron.trim();
  if (spec.kind === "planned") spec.at = form.at.split("\n").map((t) => t.trim()).filter(Boolean);
  if (spec.kind === "adhoc") spec.timezone = "";
  return { spec };
}
