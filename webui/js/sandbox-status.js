// How commands run (sandboxed or not), in words for the line shown next to the work
// folder in Settings and in the Files panel. The server sends the state
// (execution/sandbox_choice.py `status`); this says it, with a warning when commands
// are not confined: `auto` fell back, or the user chose none.

import { h } from "./dom.js";

/** {text, warn} for a sandbox status from the server. */
export function sandboxWords(status) {
  if (!status) return { text: "", warn: false };
  if (status.broken) {
    return { warn: true, text: `Commands can't run: the ${status.setting} sandbox is not usable `
      + `here (${status.broken}). Install it, or choose another sandbox in Settings.` };
  }
  if (status.confined) {
    const net = status.network
      ? " They reach the network only through Cadre, which checks every address they"
        + " connect to; Cadre's own server stays out of their reach."
      : " They have no network.";
    const root = status.as_root
      ? ` They run as root inside, without its powers: this machine can't give them a user `
        + `of their own (${status.as_root}).`
      : "";
    return { warn: false, text: `Commands run sandboxed (${status.backend}): they can change `
      + `only the work folder and can't see Cadre's files or your home folder.${net}${root}` };
  }
  if (status.fallback) {
    return { warn: true, text: "Warning: commands run without a sandbox, with all your rights: "
      + `no sandbox works here (${status.fallback}).` };
  }
  return { warn: true, text: "Commands run without a sandbox (setting: none): they can read "
    + "and change everything you can." };
}

/** Fill `el` (a paragraph with role="status") with the words for `status`. */
export function showSandbox(el, status) {
  const { text, warn } = sandboxWords(status);
  el.replaceChildren(warn ? h("strong", {}, text) : text);
  el.classList.toggle("sandbox-warn", warn);
  el.dataset.confined = status?.confined ? "yes" : "no";
  el.hidden = !text;
}
