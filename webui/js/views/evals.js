// The Evaluations panel (admins): choose a suite (usr/evals/ or Cadre's own), a profile and
// a model, run it and watch its progress (polled while the run goes on); then its result as
// a table and a chart, compared with an earlier result when one is chosen, each run linked
// to its chat, and the HTML report.

import { byTestId, h, say } from "../dom.js";
import { hashOf } from "../router.js";
import { EvalsStore } from "../stores/evals.js";
import { passRateChart } from "./eval-chart.js";

const POLL_MS = 1000;
const CHANGE_WORDS = { better: "better", worse: "worse", same: "same", new: "new", gone: "not run now" };

const percent = (rate) => (rate === null || rate === undefined ? "–" : `${Math.round(rate * 100)}%`);

function option(value, label, selected = false) {
  const node = h("option", { value }, label);
  node.selected = selected;
  return node;
}

function resultLabel(r) {
  const when = new Date(r.started_at * 1000).toLocaleString();
  const model = r.model ? ` · ${r.model}` : "";
  return `${r.suite} · ${r.profile}${model} · ${r.passed}/${r.total} · ${when}`;
}

export function mountEvals({ notices }) {
  const store = new EvalsStore();
  const dialog = byTestId("evals");
  const field = (name) => byTestId(`eval-${name}`);
  const status = field("status");
  const error = field("error");
  const progress = field("progress");
  const stopButton = field("stop");
  const runButton = field("run");
  const shown = field("shown");
  const against = field("against");
  const out = field("result");
  let job = null;
  let timer = null;

  async function load() {
    say(error, "");
    try {
      const data = await store.overview();
      fill(data);
      await loadResults();
      if (data.latest?.state === "running") follow(data.latest);
    } catch (err) {
      say(error, `could not load the evaluations: ${err.message}`);
    }
  }

  function fill(data) {
    const usable = data.suites.filter((s) => !s.problem);
    field("suite").replaceChildren(...usable.map((s) => option(s.name,
      `${s.name} (${s.tasks} task${s.tasks === 1 ? "" : "s"}${s.shipped ? ", Cadre's own" : ""})`)));
    field("suite-problems").replaceChildren(...data.suites.filter((s) => s.problem)
      .map((s) => h("li", { class: "error-text" }, `${s.name}: ${s.problem}`)));
    field("folder").textContent = data.folder;
    const profiles = field("profile");
    profiles.replaceChildren(...data.profiles.map((p) => option(p, p, p === "default")));
    const models = data.models;
    field("model").replaceChildren(
      option("", `Default (${models.default.chat_model})`),
      ...models.presets.map((p) => option(p.name, `Preset ${p.name} (${p.chat_model})`)),
      ...models.models.filter((m) => m.name !== models.default.chat_model).map((m) => option(m.name, m.name)));
    runButton.disabled = usable.length === 0;
  }

  async function loadResults(select = "") {
    const results = await store.results();
    const keep = select || shown.value;
    shown.replaceChildren(...results.map((r) => option(r.name, resultLabel(r), r.name === keep)));
    const was = against.value;
    against.replaceChildren(option("", "Nothing"),
      ...results.map((r) => option(r.name, resultLabel(r), r.name === was)));
    field("results-box").hidden = results.length === 0;
    if (results.length) await showResult();
    else out.replaceChildren(h("p", { class: "muted" }, "No results yet: run a suite."));
  }

  async function start(event) {
    event.preventDefault();
    say(error, "");
    runButton.disabled = true;
    try {
      follow(await store.start({ suite: field("suite").value, profile: field("profile").value,
        model: field("model").value, repeat: Number(field("repeat").value) || 1 }));
    } catch (err) {
      say(error, err.message);
      runButton.disabled = false;
    }
  }

  function follow(started) {
    job = started;
    draw(job);
    clearInterval(timer);
    timer = setInterval(poll, POLL_MS);
  }

  async function poll() {
    if (!job) return;
    try {
      job = await store.progress(job.id);
    } catch (err) {
      clearInterval(timer);
      say(error, `lost track of the run: ${err.message}`);
      return;
    }
    draw(job);
    if (job.state !== "running") {
      clearInterval(timer);
      if (job.result) await loadResults(job.result);
    }
  }

  function draw(view) {
    const running = view.state === "running";
    progress.max = view.total || 1;
    progress.value = view.done;
    field("progress-box").hidden = false;
    stopButton.hidden = !running;
    runButton.disabled = running;
    const passed = view.runs.filter((r) => r.passed).length;
    const words = running ? `Running ${view.suite} on ${view.profile}: ${view.done} of ${view.total} runs done, ${passed} passed.`
      : view.state === "done" ? `Finished ${view.suite}: passed ${passed} of ${view.total}.`
        : view.state === "stopped" ? `Stopped ${view.suite}: ${view.done} of ${view.total} runs done, ${passed} passed.`
          : `The run failed. ${view.error}`;
    status.textContent = words;
    progress.setAttribute("aria-valuetext", `${view.done} of ${view.total} runs done`);
  }

  async function showResult() {
    if (!shown.value) return;
    try {
      render(await store.result(shown.value, against.value === shown.value ? "" : against.value));
    } catch (err) {
      say(error, err.message);
    }
  }

  function render(data) {
    const changes = data.changes ? Object.fromEntries(data.changes.map((c) => [c.name, c])) : null;
    const before = changes ? Object.fromEntries(data.changes.map((c) => [c.name, c.before])) : null;
    const head = ["Task", "Passed", "Rate", ...(changes ? ["Before", "Change"] : []), "Tokens", "Cost (USD)", "Time (s)"];
    const cell = (text, cls = "") => h("td", { class: cls }, text);
    const rows = data.tasks.map((t) => h("tr", { testid: "eval-row", data: { task: t.name } },
      h("th", { scope: "row" }, t.name), cell(`${t.passed}/${t.runs}`), cell(percent(t.rate)),
      ...(changes ? [cell(percent(changes[t.name]?.before)),
        cell(CHANGE_WORDS[changes[t.name]?.change] ?? "", `eval-change ${changes[t.name]?.change ?? ""}`)] : []),
      cell(t.tokens.toLocaleString()), cell(t.cost.toFixed(4)), cell(t.seconds.toFixed(1))));
    const table = h("table", { class: "eval-table", testid: "eval-table" },
      h("caption", {}, `Passed ${data.passed} of ${data.total}`),
      h("thead", {}, h("tr", {}, ...head.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, ...rows));
    const runs = data.result.runs.map((run) => h("li", { class: run.passed ? "pass" : "fail" },
      `${run.task} (run ${run.attempt}): ${run.passed ? "passed" : "failed"}`,
      run.error ? ` — ${run.error}` : "",
      ...run.checks.filter((c) => !c.passed).map((c) => ` — ${c.description}${c.detail ? `: ${c.detail}` : ""}`),
      " ", run.chat_id ? h("a", { href: hashOf(run.chat_id), testid: "eval-chat-link",
        onclick: () => dialog.close() }, "Open the chat") : null));
    out.replaceChildren(
      h("div", { class: "eval-chart-box" }, passRateChart(data.tasks, before),
        before ? h("p", { class: "muted eval-legend" }, h("span", { class: "eval-key before" }), " before ",
          h("span", { class: "eval-key now" }), " now") : null),
      h("div", { class: "eval-table-box" }, table),
      h("p", {}, h("a", { href: store.reportUrl(data.name), target: "_blank", rel: "noopener",
        testid: "eval-report-link" }, "Open the full report")),
      h("details", { class: "eval-runs" }, h("summary", {}, `Runs (${data.result.runs.length})`),
        h("ul", {}, ...runs)));
  }

  field("form").addEventListener("submit", start);
  stopButton.addEventListener("click", async () => {
    if (!job) return;
    try {
      draw(await store.stop(job.id));
      status.textContent = "Stopping: the runs going on finish, the rest are left out.";
    } catch (err) {
      notices.error(err, "Evaluations");
    }
  });
  shown.addEventListener("change", showResult);
  against.addEventListener("change", showResult);
  byTestId("evals-open").addEventListener("click", () => {
    dialog.showModal();
    load();
  });
  byTestId("evals-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => clearInterval(timer));
}
