// Who is logged in, and My account: their name and role, a new password (the current one
// and the new one twice), their API keys (views/api-keys.js), their own settings
// (views/my-settings.js), logging out.
//
// Also what the page offers by role: once /api/me answers, `<html data-role="member">`
// hides what only an admin may use (`.admin-only`: Settings, model setup, skill imports;
// users.css), and the Users entry shows for an admin. In the desktop mode (no accounts)
// nothing changes: there is no My account and nothing is hidden.

import { byTestId, say } from "../dom.js";
import { mountApiKeys } from "./api-keys.js";
import { confirmDialog } from "./dialogs.js";
import { mountMySettings } from "./my-settings.js";

const ROLE_WORDS = { admin: "an admin", member: "a member" };
const SOURCE_WORDS = { oidc: "your single sign-on provider", header: "the proxy in front of Cadre" };

export function mountAccount({ me, notices }) {
  const dialog = byTestId("account");
  const opener = byTestId("account-open");
  const form = byTestId("account-password-form");
  const field = (id) => byTestId(id, form);
  const error = field("account-password-error");
  const done = field("account-password-done");
  const elsewhere = byTestId("account-password-elsewhere");
  const keys = mountApiKeys(dialog, { me });
  const mine = mountMySettings(dialog, { me });

  function applyRole() {
    const root = document.documentElement;
    if (me.accounts) root.dataset.role = me.role;
    else delete root.dataset.role;
    opener.hidden = !me.accounts;
    byTestId("users-open").hidden = !(me.accounts && me.isAdmin);
    byTestId("account-name").textContent = me.name;
    opener.title = me.accounts ? `My account: ${me.name} (${me.role})` : "";
  }

  function render() {
    byTestId("account-who").textContent =
      `You are logged in as ${me.name}, ${ROLE_WORDS[me.role] || me.role}.`;
    field("account-username").value = me.name;
    // The settings' login changes its password in Settings; one a provider vouches for has none here.
    let other = "";
    if (me.firstAdmin) {
      other = "Your login and password are this server's own: change them in Settings, under Server and security.";
    } else if (me.source !== "password") {
      other = `You log in through ${SOURCE_WORDS[me.source] || me.source}: Cadre keeps no password for you.`;
    }
    elsewhere.textContent = other;
    elsewhere.hidden = !other;
    form.hidden = Boolean(other);
  }

  function clearPassword() {
    for (const id of ["account-current", "account-new", "account-again"]) field(id).value = "";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    say(error, "");
    done.textContent = "";
    const current = field("account-current").value;
    const next = field("account-new").value;
    const problem = !current ? ["account-current", "type your current password"]
      : next.length < 8 ? ["account-new", "the new password needs at least 8 characters"]
        : next !== field("account-again").value ? ["account-again", "the two new passwords differ: type the same one twice"]
          : null;
    if (problem) {
      say(error, problem[1]);
      field(problem[0]).focus();
      return;
    }
    const save = field("account-password-save");
    save.disabled = true;
    try {
      await me.changePassword(current, next);
      clearPassword();
      done.textContent = "Your password is changed. Your other browsers were logged out; this one goes on.";
    } catch (err) {
      say(error, err.message);
      if (/current password/i.test(err.message)) field("account-current").focus();
    } finally {
      save.disabled = false;
    }
  });

  byTestId("account-logout").addEventListener("click", async () => {
    try {
      await me.logout();
      window.location.assign("/login");
    } catch (err) {
      notices.error(err, "Log out");
    }
  });

  opener.addEventListener("click", () => {
    render();
    clearPassword();
    say(error, "");
    done.textContent = "";
    dialog.showModal();
    // Not the header's first button (Log out): Enter on opening must not log out.
    byTestId("account-close").focus();
    keys.open();
    mine.open();
  });
  byTestId("account-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    clearPassword();
    keys.close();
    mine.close();
  });
  // Escape closes a dialog at once: with My settings changed and not saved, ask first.
  dialog.addEventListener("cancel", async (event) => {
    if (!mine.edited()) return;
    event.preventDefault();
    const discard = await confirmDialog("Discard your changes?",
      "The changes to My settings are not saved yet.",
      { okLabel: "Discard", cancelLabel: "Keep editing", danger: true });
    if (discard) dialog.close();
  });
  me.on("change", applyRole);
}
