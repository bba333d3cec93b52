// The page's frame on small screens, and where the keyboard focus goes.
//
// Below 1000 px the agents panel, and below 700 px the chat list, are drawers
// (app.css decides the widths; a drawer exists where its toggle is shown). A
// toggle in the chat header opens one; Escape, the scrim, its Close button or the
// toggle again close it. While a drawer is open the chat behind it is inert, focus
// moves into the drawer, and back to the toggle when it closes.
//
// The message box gets the focus on load (not on touch screens, where it would
// pop up the keyboard) and after New chat.

import { byTestId } from "../dom.js";
import { mountThemeSwitch } from "../theme.js";

const FOCUSABLE = [
  "button:not([disabled])", "[href]", "input:not([disabled])", "select", "textarea",
  "[tabindex]:not([tabindex='-1'])",
].join(", ");

export function mountLayout({ chats, projects }) {
  const app = document.querySelector(".app");
  const chat = document.querySelector(".chat");
  const input = byTestId("message-input");
  const drawers = {
    chats: { panel: byTestId("sidebar"), toggle: byTestId("chats-toggle"), close: byTestId("chats-close") },
    agents: { panel: byTestId("agents-panel"), toggle: byTestId("agents-toggle"), close: byTestId("agents-close") },
  };
  let openName = null;

  function isDrawer(name) {
    return getComputedStyle(drawers[name].toggle).display !== "none";
  }

  function open(name) {
    if (openName) close({ restoreFocus: false });
    openName = name;
    app.dataset.drawer = name;
    const { panel, toggle } = drawers[name];
    toggle.setAttribute("aria-expanded", "true");
    chat.inert = true;
    // Everything but the open drawer is under the scrim: out of the keyboard's reach too.
    for (const [other, d] of Object.entries(drawers)) if (other !== name) d.panel.inert = true;
    const first = name === "chats"
      ? panel.querySelector('[aria-current="true"]') || byTestId("new-chat", panel)
      : panel.querySelector(FOCUSABLE);
    (first || panel).focus();
  }

  function close({ restoreFocus = true } = {}) {
    if (!openName) return;
    const { toggle } = drawers[openName];
    openName = null;
    delete app.dataset.drawer;
    toggle.setAttribute("aria-expanded", "false");
    chat.inert = false;
    for (const d of Object.values(drawers)) d.panel.inert = false;
    if (restoreFocus) toggle.focus();
  }

  for (const [name, d] of Object.entries(drawers)) {
    d.toggle.addEventListener("click", () => (openName === name ? close() : open(name)));
    d.close.addEventListener("click", () => close());
  }
  byTestId("scrim").addEventListener("click", () => close());
  document.addEventListener("keydown", (event) => {
    // A dialog above the drawer handles its own Escape.
    if (event.key === "Escape" && openName && !document.querySelector("dialog[open]")) {
      event.preventDefault();
      close();
    }
  });
  // Grown wide again: the drawer is a column now, nothing to close.
  window.addEventListener("resize", () => {
    if (openName && !isDrawer(openName)) close({ restoreFocus: false });
  });

  // Picking a chat in the drawer (even the one shown) shows it.
  byTestId("chat-list").addEventListener("click", (event) => {
    if (openName === "chats" && event.target.closest('[data-testid="chat-item"]')) {
      close({ restoreFocus: false });
    }
  });

  // Picking an agent in the drawer shows its items (the log was behind the drawer).
  byTestId("agent-tree").addEventListener("click", (event) => {
    if (openName === "agents" && event.target.closest('[data-testid="tree-agent"]')) close();
  });

  byTestId("new-chat").addEventListener("click", (event) => {
    const button = event.currentTarget;
    if (openName === "chats") close({ restoreFocus: false });
    // The sidebar's own listener ran first and started the creation. Once the chat is
    // open the cursor goes to the message box, unless the person has moved on meanwhile
    // (typing in the search box: the rest of their words would land in the message).
    chats.creating?.then(() => {
      const at = document.activeElement;
      if (!at || at === document.body || at === button) input.focus();
    }, () => {});
  });
  // A chat started from the Projects panel (opened from the drawer) is shown at once.
  projects.on("chat-started", () => {
    if (openName === "chats") close({ restoreFocus: false });
    input.focus();
  });
  if (!window.matchMedia("(pointer: coarse)").matches) input.focus();

  mountThemeSwitch(byTestId("theme-select"));
}
