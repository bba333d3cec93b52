// The login page: send the credentials, go to the app when they are right; offer single
// sign-on (an OpenID Connect provider) when the server has one set up.
import { fetchJson, postJson } from "./http.js";

const form = document.querySelector('[data-testid="login-form"]');
const error = document.querySelector('[data-testid="login-error"]');
const sso = document.querySelector('[data-testid="login-oidc"]');

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.hidden = true;
  const data = new FormData(form);
  try {
    await postJson("/login", { login: data.get("login"), password: data.get("password") });
    // Back to the chat whose address brought the user here (the redirect to the
    // login kept its fragment, `#/chat/<id>`), else to the app's start.
    window.location.assign(`/${window.location.hash}`);
  } catch (err) {
    error.textContent = err.message;
    error.hidden = false;
  }
});

/** "Log in with <provider>" when the server offers it (GET /api/login/methods). */
async function offerSingleSignOn() {
  try {
    const methods = await fetchJson("/api/login/methods");
    if (!methods || !methods.oidc) return;
    sso.textContent = `Log in with ${methods.oidc.name}`;
    sso.href = methods.oidc.url;
    sso.hidden = false;
  } catch (err) {
    // The password form works without it; the server's log says what failed.
    console.warn(`single sign-on is not offered: ${err.message}`);
  }
}

offerSingleSignOn();
