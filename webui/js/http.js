// JSON over HTTP for the few plain routes of protocol.md. Errors become
// exceptions carrying the server's `{"error": ...}` text.

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "HttpError";
    this.status = status;
  }
}

/** The CSRF token the server put in a cookie; sent back with every change. */
export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)cadre_csrf=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

/** fetch `url`; resolves with the parsed JSON, rejects with an HttpError. */
export async function fetchJson(url, options = {}) {
  let response;
  const method = (options.method || "GET").toUpperCase();
  const headers = { ...(options.headers || {}) };
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrfToken();
  try {
    response = await fetch(url, { credentials: "same-origin", ...options, headers });
  } catch (err) {
    throw new HttpError(0, `cannot reach the server (${err.message})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = data?.error || `${response.status} ${response.statusText}`.trim();
    throw new HttpError(response.status, message);
  }
  return data;
}

export function postJson(url, body) {
  return fetchJson(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}
