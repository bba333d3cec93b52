// The Users panel's "Add a user" form: a login name, a role, and either an invite link
// (shown once, with a Copy button and when it expires) or a password set now. What is
// wrong is said next to the field it is about.

import { byTestId, say } from "../dom.js";
import { fieldCopyButton } from "../copy.js";

const WHEN = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "short" });

/**
 * `shown(formOpen)` hides the panel's list while the form (or the invite) shows;
 * `told(text)` says in the panel's status line what was done.
 */
export function mountUserAdd(dialog, { users, shown, told }) {
  const form = byTestId("user-form", dialog);
  const field = (id) => byTestId(id, dialog);
  const name = field("user-name");
  const password = field("user-password");
  const error = field("user-error");
  const invite = field("invite-made");
  const link = field("invite-link");
  link.after(fieldCopyButton(link, { label: "Copy the invite link", testid: "invite-copy" }));
  let opener = null;

  const choice = (group) => form.querySelector(`input[name="${group}"]:checked`).value;

  function setWay() {
    const byPassword = choice("user-way") === "password";
    field("user-password-box").hidden = !byPassword;
    field("user-save").textContent = byPassword ? "Add user" : "Add and make the link";
  }

  /** The fields a problem can be about, each with the line under it that says it. */
  const FIELDS = [
    { input: name, box: field("user-name-error"), test: /login name|user name|already|named/i },
    { input: password, box: field("user-password-error"), test: /password/i },
  ];

  /** No problem said any more: under `input` only, or anywhere. */
  function unmark(input = null) {
    if (!input) say(error, "");
    for (const about of FIELDS) {
      if (input && about.input !== input) continue;
      say(about.box, "");
      about.input.removeAttribute("aria-invalid");
      about.input.setAttribute("aria-describedby", about.input.getAttribute("aria-describedby")
        .split(" ").filter((id) => id !== about.box.id).join(" "));
    }
  }

  /** Say a problem under the field it is about (marked and focused), else below the form. */
  function problem(text) {
    const about = FIELDS.find(({ test, input }) => test.test(text) && !input.closest("[hidden]"));
    if (!about) {
      say(error, text);
      error.scrollIntoView({ block: "nearest" });
      return;
    }
    say(about.box, text);
    about.input.setAttribute("aria-invalid", "true");
    about.input.setAttribute("aria-describedby", `${about.input.getAttribute("aria-describedby")} ${about.box.id}`);
    about.input.focus();
  }

  function open(from) {
    opener = from;
    form.reset();
    unmark();
    setWay();
    password.type = "password";
    invite.hidden = true;
    form.hidden = false;
    shown(true);
    name.focus();
  }

  function close() {
    form.hidden = true;
    invite.hidden = true;
    link.value = "";
    shown(false);
  }

  function showInvite(user, made) {
    form.hidden = true;
    field("invite-made-title").textContent = `Invite link for ${user.name}`;
    field("invite-made-text").textContent = `Send this link to ${user.name} (by email or a chat message). ` +
      "Opening it lets them choose their password and log in. It works once.";
    field("invite-expires").textContent = `It expires on ${WHEN.format(made.expires * 1000)}. ` +
      "If it gets lost or expires, set their password with Set password, or delete them and invite them again.";
    link.value = made.link;
    invite.hidden = false;
    link.focus();
    link.select();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    unmark();
    const login = name.value.trim();
    const byPassword = choice("user-way") === "password";
    if (!login) return problem("Give them a login name.");
    if (byPassword && password.value.length < 8) {
      return problem("Their password needs at least 8 characters.");
    }
    const save = field("user-save");
    save.disabled = true;
    try {
      const role = choice("user-role");
      const made = await users.add({ name: login, role, password: password.value, invite: !byPassword });
      const user = made.user;
      told(byPassword
        ? `${user.name} was added. They log in as ${user.name} with the password you chose.`
        : `${user.name} was added and invited.`);
      if (made.invite) showInvite(user, made.invite);
      else {
        close();
        opener?.focus();
      }
    } catch (err) {
      problem(err.message);
    } finally {
      save.disabled = false;
    }
  });
  form.addEventListener("change", (event) => {
    if (event.target.name === "user-way") setWay();
  });
  // A field typed in again is no longer wrong (until the next try says otherwise).
  form.addEventListener("input", (event) => unmark(event.target));
  field("user-password-show").addEventListener("change", (event) => {
    password.type = event.target.checked ? "text" : "password";
  });
  field("user-cancel").addEventListener("click", () => {
    close();
    opener?.focus();
  });
  field("invite-done").addEventListener("click", () => {
    close();
    opener?.focus();
  });
  field("user-new").addEventListener("click", (event) => open(event.currentTarget));
  return { close };
}
