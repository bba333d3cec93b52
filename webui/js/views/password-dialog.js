// The password asked for again before a change that lets Cadre run another program (a
// program setting, the sandbox, the login: server/security/reauth.py). http.js asks through
// `askPassword` when the server answers that it needs the password; without a login
// the server never does, and nothing here is shown. Someone who signs in only through
// single sign-on has no password: `askSignIn` offers them a link that signs them in
// again through their provider, after which they make the change again.

import { andList, h } from "../dom.js";

let parts = null;

function build() {
  const title = h("h2", { class: "dialog-title", id: "password-title" }, "Confirm with your password");
  const text = h("p", { class: "dialog-text", id: "password-text", testid: "password-text" });
  const wrong = h("p", { class: "error-text", id: "password-wrong", testid: "password-wrong",
    role: "alert", hidden: true });
  const input = h("input", { type: "password", class: "input", id: "password-input",
    testid: "password-input", autocomplete: "current-password", required: true,
    "aria-describedby": "password-text password-wrong" });
  const cancel = h("button", { type: "button", class: "btn", testid: "password-cancel" }, "Cancel");
  const ok = h("button", { type: "submit", class: "btn primary", testid: "password-ok" }, "Confirm");
  const form = h("form", { method: "dialog", class: "dialog-form" },
    title, text, h("label", { for: "password-input" }, "Password"), input, wrong,
    h("div", { class: "dialog-actions" }, cancel, ok));
  const el = h("dialog", { class: "dialog small", testid: "password-dialog",
    "aria-labelledby": "password-title", "aria-describedby": "password-text" }, form);
  document.body.append(el);
  cancel.addEventListener("click", () => el.close("cancel"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value) el.close("ok");
    else input.focus();
  });
  return { el, text, wrong, input };
}

/**
 * Ask for the account's password: resolves with it, or null when the person cancels.
 * `titles`: the settings' names as the form shows them; `problem`: what went wrong the
 * last time ("wrong password"), shown and read out.
 */
export function askPassword({ titles = [], problem = "" } = {}) {
  parts ??= build();
  const { el, text, wrong, input } = parts;
  const what = titles.length ? andList(titles) : "this setting";
  text.textContent = `Changing ${what} needs your password again, so that only you can ` +
    "change what Cadre runs on this computer.";
  wrong.textContent = problem ? "That password is not right. Try again." : "";
  wrong.hidden = !problem;
  input.value = "";
  el.returnValue = "";
  el.showModal();
  input.focus();
  return new Promise((resolve) => {
    el.addEventListener("close", () => {
      const given = el.returnValue === "ok" ? input.value : null;
      input.value = ""; // not kept in the page once sent
      resolve(given);
    }, { once: true });
  });
}

let signIn = null;

function buildSignIn() {
  const title = h("h2", { class: "dialog-title", id: "sign-in-title" }, "Sign in again");
  const text = h("p", { class: "dialog-text", id: "sign-in-text", testid: "sign-in-text" });
  const link = h("a", { class: "btn primary", testid: "sign-in-again" }, "Sign in again");
  const cancel = h("button", { type: "button", class: "btn", testid: "sign-in-cancel" }, "Cancel");
  const actions = h("div", { class: "dialog-actions" }, cancel, link);
  const el = h("dialog", { class: "dialog small", testid: "sign-in-dialog",
    "aria-labelledby": "sign-in-title", "aria-describedby": "sign-in-text" },
  h("div", { class: "dialog-form" }, title, text, actions));
  document.body.append(el);
  cancel.addEventListener("click", () => el.close("cancel"));
  return { el, text, link };
}

/**
 * Tell the person a change needs a recent sign-in, with a link through their provider
 * (`url`, named `provider`); resolves when they cancel (the link leaves the page).
 */
export function askSignIn({ titles = [], url = "", provider = "single sign-on" } = {}) {
  signIn ??= buildSignIn();
  const { el, text, link } = signIn;
  const what = titles.length ? andList(titles) : "this setting";
  text.textContent = `Changing ${what} needs a recent sign-in, so that only you can change ` +
    `what Cadre runs on this computer. Sign in again through ${provider}, then make the ` +
    "change again.";
  link.setAttribute("href", url);
  el.showModal();
  link.focus();
  return new Promise((resolve) => el.addEventListener("close", () => resolve(), { once: true }));
}
