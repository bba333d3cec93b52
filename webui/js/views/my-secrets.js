// My settings' secrets: the person's own, by name (their values never come back from the
// server: "***"), one added as a name and a value, one removed. Kept in the page until My
// settings is saved, each new one marked so. Below them, the server's secrets they may
// use too.

import { andList, byTestId, h, say } from "../dom.js";

/** What §§secret(NAME) can name (accounts/personal.py SECRET_NAME). */
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** A stored value as the server shows it; sent back, it keeps the value. */
const MASK = "***";

/**
 * The secrets' part of the form under `root`; `onChange()` is called after each add or
 * remove. Returns {show(view), edited(), value(), say(text), reset()}.
 */
export function mountMySecrets(root, { onChange }) {
  const list = byTestId("my-secrets", root);
  const empty = byTestId("my-secrets-empty", root);
  const name = byTestId("my-secret-name", root);
  const value = byTestId("my-secret-value", root);
  const error = byTestId("my-secrets-error", root);
  const shared = byTestId("my-server-secrets", root);
  /** The names the server has (their values masked). */
  let saved = {};
  /** name → MASK (as saved) or the value of one added since. */
  let current = new Map();

  function row(key, secret) {
    const added = secret !== MASK;
    return h("li", { class: "my-secret", testid: "my-secret", data: { name: key } },
      h("code", { class: "my-secret-name", testid: "my-secret-item-name" }, key),
      h("span", { class: "my-secret-masked", testid: "my-secret-masked" },
        h("span", { "aria-hidden": "true" }, MASK),
        h("span", { class: "visually-hidden" }, "value hidden")),
      added ? h("span", { class: "my-secret-new", testid: "my-secret-new" }, "not saved yet") : null,
      h("button", { type: "button", class: "btn small", testid: "my-secret-remove",
        "aria-label": `Remove the secret ${key}`, onclick: () => remove(key) }, "Remove"));
  }

  function render() {
    list.replaceChildren(...[...current].map(([key, secret]) => row(key, secret)));
    list.hidden = current.size === 0;
    empty.hidden = current.size > 0;
  }

  function problem(text, field) {
    say(error, text);
    for (const input of [name, value]) input.removeAttribute("aria-invalid");
    if (field) {
      field.setAttribute("aria-invalid", "true");
      field.focus();
    }
  }

  function add() {
    const key = name.value.trim();
    if (!key) return problem("Give the secret a name.", name);
    if (!NAME.test(key)) {
      return problem(`“${key}” cannot be a secret's name: use letters, digits, _ . and - only (64 at most).`, name);
    }
    if (!value.value) return problem(`Type the value of ${key}.`, value);
    problem("");
    current.set(key, value.value);
    name.value = "";
    value.value = "";
    render();
    name.focus(); // ready for the next one
    onChange();
  }

  function remove(key) {
    const keys = [...current.keys()];
    const next = keys[keys.indexOf(key) + 1] ?? keys[keys.indexOf(key) - 1];
    current.delete(key);
    render();
    // Focus stays in the list (the next row's Remove), or goes to the name to add one.
    const button = next && list.querySelector(`[data-name="${CSS.escape(next)}"] [data-testid="my-secret-remove"]`);
    (button || name).focus();
    onChange();
  }

  byTestId("my-secret-add", root).addEventListener("click", add);
  // Enter in the two fields adds the secret (it must not save the whole form yet).
  for (const input of [name, value]) {
    input.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault();
      add();
    });
  }

  return {
    /** Show what the server answered (GET or PATCH /api/my/settings). */
    show(view) {
      saved = { ...view.values.secrets };
      current = new Map(Object.entries(saved).sort(([a], [b]) => a.localeCompare(b)));
      const theirs = view.server_secrets;
      shared.textContent = theirs.length
        ? `The server's secrets your agents may use too: ${andList(theirs)}. One of yours with the same name is used instead.`
        : "The server shares none of its secrets with you.";
      render();
    },
    /** Whether anything was added or removed since the server's answer. */
    edited() {
      if (current.size !== Object.keys(saved).length) return true;
      return [...current].some(([key, secret]) => saved[key] !== secret);
    },
    /** The `secrets` to send: every one kept (MASK keeps its value), the new ones in clear. */
    value() {
      return Object.fromEntries(current);
    },
    say(text) {
      problem(text, text ? name : null);
    },
    /** Forget what was typed (the dialog closed: a value is not kept in the page). */
    reset() {
      name.value = "";
      value.value = "";
      problem("");
      current = new Map();
      list.replaceChildren();
    },
  };
}
