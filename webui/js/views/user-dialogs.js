// The Users panel's two questions: a new password for someone, and deleting someone (what
// becomes of their chats and files: deleted, or handed over to another user). Each dialog
// says what went wrong inside it and stays open until it worked or the admin cancels.

import { byTestId, h, say } from "../dom.js";

/**
 * Open `dialog`, let `submit()` do the work while it says what is wrong in `error`;
 * resolves with what `submit` returned, or null when cancelled. The focus goes back to
 * `from` afterwards.
 */
function ask(dialog, error, from, submit) {
  const form = dialog.querySelector("form");
  const cancel = dialog.querySelector('[data-testid$="-cancel"]');
  say(error, "");
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    let result = null;
    const onSubmit = async (event) => {
      event.preventDefault();
      say(error, "");
      const button = form.querySelector('button[type="submit"]');
      button.disabled = true;
      try {
        result = await submit();
        if (result !== undefined) dialog.close("ok");
      } catch (err) {
        say(error, err.message);
      } finally {
        button.disabled = false;
      }
    };
    const onCancel = () => dialog.close("cancel");
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("close", () => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      if (from?.isConnected) from.focus();
      resolve(dialog.returnValue === "ok" ? result : null);
    }, { once: true });
  });
}

export function mountUserDialogs({ users }) {
  const reset = byTestId("user-password-dialog");
  const resetInput = byTestId("user-reset-password", reset);
  const resetShow = byTestId("user-reset-show", reset);
  const removal = byTestId("user-delete-dialog");
  const heir = byTestId("user-heir", removal);

  resetShow.addEventListener("change", () => {
    resetInput.type = resetShow.checked ? "text" : "password";
  });
  removal.addEventListener("change", (event) => {
    if (event.target.name !== "user-data") return;
    heir.disabled = event.target.value !== "hand_over";
    if (!heir.disabled) heir.focus();
  });

  /** A new password for `user`: true once it is set, null when cancelled. */
  function resetPassword(user, from) {
    byTestId("user-reset-title", reset).textContent = `Set a new password for ${user.name}`;
    resetInput.value = "";
    resetInput.type = "password";
    resetShow.checked = false;
    const error = byTestId("user-reset-error", reset);
    const asked = ask(reset, error, from, async () => {
      if (resetInput.value.length < 8) {
        say(error, "The password needs at least 8 characters.");
        resetInput.focus();
        return undefined; // stay open
      }
      await users.change(user.name, { password: resetInput.value });
      return true;
    });
    resetInput.focus();
    return asked.finally(() => {
      resetInput.value = "";
    });
  }

  /** Delete `user` after asking what becomes of their things: the server's answer with
   * `to` (who got them; "" when deleted), or null when cancelled. `me`: the admin asking,
   * offered first as the one to hand them to. */
  function remove(user, from, me) {
    byTestId("user-delete-title", removal).textContent = `Delete ${user.name}'s account?`;
    const others = users.users.filter((u) => u.name !== user.name);
    others.sort((a, b) => (a.name === me ? -1 : b.name === me ? 1 : a.name.localeCompare(b.name)));
    heir.replaceChildren(...others.map((u) => h("option", { value: u.name },
      u.name === me ? `${u.name} (you)` : u.name)));
    heir.disabled = true;
    for (const radio of removal.querySelectorAll('input[name="user-data"]')) radio.checked = false;
    const error = byTestId("user-delete-error", removal);
    const asked = ask(removal, error, from, async () => {
      const chosen = removal.querySelector('input[name="user-data"]:checked')?.value;
      if (!chosen) {
        say(error, "Choose what becomes of their chats and files first.");
        byTestId("user-data-hand-over", removal).focus();
        return undefined;
      }
      const to = chosen === "hand_over" ? heir.value : null;
      const done = await users.remove(user.name, to);
      return { ...done, to: to || "" };
    });
    byTestId("user-delete-cancel", removal).focus(); // Enter must not delete by accident
    return asked;
  }

  return { resetPassword, remove };
}
