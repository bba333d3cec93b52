// JSON over HTTP for the few plain routes of protocol.md. Errors become
// exceptions carrying the server's `{"error": ...}` text.

export class HttpError extends Error {
  constructor(status, message, data = null) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.data = data; // the server's whole answer, for the fields an error carries besides its words
  }
}

let token = null;
/** Asks the person for their password ({titles, problem} → string, or null): views/password-dialog.js. */
let passwordAsker = null;

/** Offers a new sign-in at the provider ({titles, url, provider}): views/password-dialog.js. */
let signInAsker = null;

/** The header the password goes in, percent-encoded (a header holds only ASCII): server/security/reauth.py. */
export const PASSWORD_HEADER = "X-Cadre-Password";

/** Who asks for the password when a change needs it (the page sets it; the login page does not). */
export function onPasswordNeeded(ask) {
  passwordAsker = ask;
}

/** Who offers a new sign-in when a change needs a recent one (someone without a password). */
export function onSignInNeeded(ask) {
  signInAsker = ask;
}

/**
 * The session's CSRF token, sent with every change. The server hands it out at
 * /api/csrf, an answer no page of another origin can read (it is in no cookie).
 * Asked once per page; `fresh` asks again (a login in another tab renews it).
 */
export function csrfToken(fresh = false) {
  if (fresh || !token) {
    token = fetch("/api/csrf", { credentials: "same-origin", cache: "no-store" })
      .then((response) => {
        if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
        return response.json();
      })
      .then((data) => data.token)
      .catch((err) => {
        token = null;
        throw new HttpError(0, `cannot get a CSRF token from the server (${err.message})`);
      });
  }
  return token;
}

/** fetch `url`; resolves with the parsed JSON, rejects with an HttpError. */
export async function fetchJson(url, options = {}, retried = false) {
  let response;
  const method = (options.method || "GET").toUpperCase();
  const headers = { ...(options.headers || {}) };
  const changes = method !== "GET" && method !== "HEAD";
  if (changes) headers["X-CSRF-Token"] = await csrfToken(retried);
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
    if (changes && response.status === 403 && message.includes("CSRF") && !retried) {
      return fetchJson(url, options, true);
    }
    if (changes && response.status === 403 && data?.password_required && passwordAsker) {
      return withPassword(url, options, retried, data, headers[PASSWORD_HEADER] !== undefined);
    }
    if (changes && response.status === 403 && data?.sign_in_required && signInAsker) {
      await signInAsker({ titles: data.titles || data.sign_in_required, url: data.sign_in_url,
        provider: data.provider });
      throw new HttpError(403, "Nothing was saved: sign in again, then make the change again.");
    }
    throw new HttpError(response.status, message, data);
  }
  return data;
}

/** The same request again with the password the person gives (asked again while wrong). */
async function withPassword(url, options, retried, data, tried) {
  const password = await passwordAsker({ titles: data.titles || data.password_required,
    problem: tried ? data.error : "" });
  if (password === null) {
    throw new HttpError(403, "Nothing was saved: your password is needed for this change.");
  }
  let encoded;
  try {
    encoded = encodeURIComponent(password);
  } catch {
    throw new HttpError(400, "The password holds characters that are not valid text.");
  }
  const headers = { ...(options.headers || {}), [PASSWORD_HEADER]: encoded };
  return fetchJson(url, { ...options, headers }, retried);
}

export function postJson(url, body) {
  return fetchJson(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}
