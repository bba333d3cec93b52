// The Evaluations panel's data: the suites, profiles and models to choose from, a run and
// its progress, the saved results and the comparison of two (routes /api/evals, the same
// as the external API's /api/v1/evals).

import { fetchJson, postJson } from "../http.js";

const BASE = "/api/evals";

const part = (name) => encodeURIComponent(name);

export class EvalsStore {
  /** {suites, profiles, models, folder, parallel, latest}. */
  overview() {
    return fetchJson(BASE);
  }

  /** Start a run: {suite, profile, model, repeat}; the run's progress as it begins. */
  start(choice) {
    return postJson(`${BASE}/runs`, choice);
  }

  progress(jobId) {
    return fetchJson(`${BASE}/runs/${part(jobId)}`);
  }

  stop(jobId) {
    return postJson(`${BASE}/runs/${part(jobId)}/stop`, {});
  }

  /** Saved results, newest first. */
  async results() {
    return (await fetchJson(`${BASE}/results`)).results;
  }

  /** One result with its per-task summary, compared with `against` when given. */
  result(name, against = "") {
    const query = against ? `?against=${part(against)}` : "";
    return fetchJson(`${BASE}/results/${part(name)}${query}`);
  }

  reportUrl(name) {
    return `${BASE}/results/${part(name)}/report`;
  }
}
