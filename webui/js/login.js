// The login page: send the credentials, go to the app when they are right.
import { postJson } from "./http.js";

const form = document.querySelector('[data-testid="login-form"]');
const error = document.querySelector('[data-testid="login-error"]');

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
