// The Users panel (an admin's): every account with its role and state (disabled, invited,
// you, the settings' login); make one an admin or a member, disable or enable them, set a
// new password, delete them (views/user-dialogs.js asks what becomes of their things);
// add someone (views/user-add.js). What went wrong is said on the row it happened on.

import { byTestId, h, say } from "../dom.js";
import { mountUserAdd } from "./user-add.js";
import { mountUserDialogs } from "./user-dialogs.js";

const ROLE_NAMES = { admin: "Admin", member: "Member" };

/** Where a deleted user's files went (the DELETE answer's `files`), in words. */
function filesWords(files, heir) {
  if (files === "deleted") return " Their files were deleted.";
  if (files && files !== "none") return ` Their files are in ${heir}'s folder: usr/${files}.`;
  return "";
}

export function mountUsers({ users, me }) {
  const dialog = byTestId("users");
  const list = byTestId("users-list");
  const status = byTestId("users-status");
  const asks = mountUserDialogs({ users });
  const adding = mountUserAdd(dialog, {
    users,
    shown: (form) => {
      list.hidden = form;
      status.hidden = form;
      byTestId("user-new").hidden = form;
    },
    told: (text) => (status.textContent = text),
  });

  /** "You · the login in Settings", "Disabled: cannot log in" (marked), ... as nodes. */
  function stateWords(user) {
    const words = []; // [text, marked]
    if (user.name === me.name) words.push(["you", false]);
    if (user.first_admin) words.push(["the login in Settings", false]);
    if (user.disabled) words.push(["disabled: cannot log in", true]);
    if (user.invited) words.push(["invited: has not chosen a password yet", false]);
    return words.flatMap(([text, marked], at) => {
      const said = at ? text : text[0].toUpperCase() + text.slice(1);
      const node = marked ? h("span", { class: "warn" }, said) : said;
      return at ? [" · ", node] : [node];
    });
  }

  function button(testid, text, label, action) {
    const el = h("button", { type: "button", class: "btn small", testid, "aria-label": label }, text);
    el.addEventListener("click", action);
    return el;
  }

  function row(user) {
    const self = user.name === me.name;
    const error = h("p", { class: "error-text", testid: "user-row-error", role: "alert", hidden: true });
    const act = (work) => () => run(user, error, work);
    const actions = [];
    if (!self) {
      const next = user.role === "admin" ? "member" : "admin";
      // Each label starts with the button's words (what a voice user says to press it).
      const words = next === "admin" ? "Make admin" : "Make member";
      actions.push(button("user-role-toggle", words, `${words}: ${user.name}`,
        act(() => changeRole(user, next))));
      actions.push(button("user-disable", user.disabled ? "Enable" : "Disable",
        `${user.disabled ? "Enable" : "Disable"} ${user.name}`, act(() => toggle(user))));
    }
    if (!self && !user.first_admin) {
      actions.push(button("user-reset", "Set password", `Set password for ${user.name}`,
        act((from) => resetPassword(user, from))));
      const remove = button("user-delete", "Delete", `Delete ${user.name}`,
        act((from) => removeUser(user, from)));
      remove.classList.add("danger");
      actions.push(remove);
    }
    return h("li", { class: "user-item", testid: "user-item",
      data: { name: user.name, role: user.role, disabled: String(user.disabled), invited: String(user.invited) } },
    h("div", { class: "user-line" },
      h("span", { class: "user-name", testid: "user-item-name" }, user.name),
      h("span", { class: "user-role", testid: "user-item-role", data: { role: user.role } },
        ROLE_NAMES[user.role] || user.role),
      h("span", { class: "user-state", testid: "user-item-state" }, ...stateWords(user)),
      h("div", { class: "user-actions" }, ...actions)),
    error);
  }

  /** Run a row's action: its error goes on the row; after a change, the focus goes back
   * to the same button of the row drawn again (or to the list's first row). */
  async function run(user, error, work) {
    const from = document.activeElement;
    const testid = from?.dataset?.testid;
    say(error, "");
    try {
      const told = await work(from);
      if (told === null) return; // the person cancelled
      status.textContent = told;
      const again = list.querySelector(`[data-testid="user-item"][data-name="${CSS.escape(user.name)}"]`);
      (again?.querySelector(`[data-testid="${testid}"]`) || list.querySelector("button") || dialog).focus();
    } catch (err) {
      say(error, err.message);
    }
  }

  async function changeRole(user, role) {
    await users.change(user.name, { role });
    return role === "admin"
      ? `${user.name} is an admin now: they manage users and the server's settings.`
      : `${user.name} is a member now: their own chats, files and keys only.`;
  }

  async function toggle(user) {
    await users.change(user.name, { disabled: !user.disabled });
    return user.disabled
      ? `${user.name} is enabled: they can log in again.`
      : `${user.name} is disabled: they cannot log in, their open pages were logged out and their keys stop working.`;
  }

  async function resetPassword(user, from) {
    const done = await asks.resetPassword(user, from);
    return done ? `${user.name}'s password is set. Tell it to them; their open pages were logged out.` : null;
  }

  async function removeUser(user, from) {
    const done = await asks.remove(user, from, me.name);
    if (!done) return null;
    const chats = done.chats === 1 ? "1 chat" : `${done.chats} chats`;
    const where = done.to ? `${chats} handed over to ${done.to}.` : `${chats} deleted.`;
    return `${user.name} was deleted: ${where}${filesWords(done.files, done.to)}`;
  }

  function render() {
    list.replaceChildren(...users.users.map(row));
  }

  async function load() {
    try {
      await users.load();
    } catch (err) {
      status.textContent = `The users could not be listed: ${err.message}`;
    }
  }

  users.on("list", render);
  byTestId("users-open").addEventListener("click", () => {
    adding.close();
    status.textContent = "";
    dialog.showModal();
    load();
  });
  byTestId("users-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => adding.close());
}
