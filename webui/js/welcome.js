// The first visit of a server without accounts: make the admin, then go to the app.
import { postJson } from "./http.js";

const form = document.querySelector('[data-testid="welcome-form"]');
const error = document.querySelector('[data-testid="welcome-error"]');

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.hidden = true;
  const value = (id) => form.querySelector(`[data-testid="${id}"]`).value;
  try {
    await postJson("/api/welcome", {
      code: value("welcome-code"),
      name: value("welcome-name"),
      password: value("welcome-password"),
    });
    window.location.assign("/");
  } catch (err) {
    error.textContent = err.message;
    error.hidden = false;
  }
});
