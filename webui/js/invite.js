// An invite link's page: the token rides in the address's fragment (never sent to a
// server's logs); the person chooses a password and is logged in.
import { fetchJson, postJson } from "./http.js";

const form = document.querySelector('[data-testid="invite-form"]');
const error = document.querySelector('[data-testid="invite-error"]');
const name = document.querySelector('[data-testid="invite-name"]');
const token = window.location.hash.replace(/^#/, "");

function show(message) {
  error.textContent = message;
  error.hidden = false;
}

async function look() {
  try {
    const found = await fetchJson(`/api/invite?token=${encodeURIComponent(token)}`);
    name.value = found.name;
  } catch (err) {
    show(err.message);
    form.querySelector("button").disabled = true;
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.hidden = true;
  const password = form.querySelector('[data-testid="invite-password"]').value;
  if (password !== form.querySelector('[data-testid="invite-again"]').value) {
    show("The two passwords differ: type the same one twice.");
    return;
  }
  try {
    await postJson("/api/invite", { token, password });
    window.location.assign("/");
  } catch (err) {
    show(err.message);
  }
});

look();
