// My account's API keys: the list (label and date), making one (shown once, with a
// Copy button and words that it will not be shown again) and revoking one after asking.

import { byTestId, h, say } from "../dom.js";
import { fieldCopyButton } from "../copy.js";
import { confirmDialog } from "./dialogs.js";

const DAY = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function mountApiKeys(root, { me }) {
  const list = byTestId("keys-list", root);
  const empty = byTestId("keys-empty", root);
  const error = byTestId("keys-error", root);
  const form = byTestId("key-form", root);
  const label = byTestId("key-label", root);
  const made = byTestId("key-made", root);
  const value = byTestId("key-value", root);
  value.after(fieldCopyButton(value, { label: "Copy the new key", testid: "key-copy" }));

  function row(key) {
    const revoke = h("button", { type: "button", class: "btn small", testid: "key-revoke",
      "aria-label": `Revoke the key ${key.label || "without a label"}` }, "Revoke");
    revoke.addEventListener("click", () => remove(key, revoke));
    return h("li", { class: "key-item", testid: "key-item", data: { keyId: key.id } },
      h("span", { class: "key-label", testid: "key-item-label" }, key.label || "(no label)"),
      h("span", { class: "key-date" }, `made ${DAY.format(key.created * 1000)}`),
      revoke);
  }

  async function load() {
    try {
      const keys = await me.keys();
      list.replaceChildren(...keys.map(row));
      list.hidden = keys.length === 0;
      empty.hidden = keys.length > 0;
    } catch (err) {
      say(error, `Your keys could not be listed: ${err.message}`);
    }
  }

  async function remove(key, button) {
    const yes = await confirmDialog(`Revoke the key “${key.label || "without a label"}”?`,
      "A program that uses it is refused from now on. This cannot be undone.",
      { okLabel: "Revoke", danger: true });
    if (!yes) {
      button.focus();
      return;
    }
    say(error, "");
    try {
      await me.revokeKey(key.id);
      await load();
      label.focus();
    } catch (err) {
      say(error, err.message);
    }
  }

  function hideMade() {
    value.value = ""; // not kept in the page once the person has it
    made.hidden = true;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    say(error, "");
    const make = byTestId("key-make", root);
    make.disabled = true;
    try {
      const key = await me.makeKey(label.value.trim());
      label.value = "";
      value.value = key.key;
      made.hidden = false;
      await load();
      value.focus();
      value.select();
    } catch (err) {
      say(error, err.message);
    } finally {
      make.disabled = false;
    }
  });
  byTestId("key-made-done", root).addEventListener("click", () => {
    hideMade();
    label.focus();
  });

  return {
    open() {
      hideMade();
      say(error, "");
      label.value = "";
      load();
    },
    close: hideMade,
  };
}
