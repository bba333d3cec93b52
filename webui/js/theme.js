// The colour theme: the user's choice (system, light or dark), remembered in
// localStorage, applied as data-theme on <html>. js/theme-boot.js applies the
// same choice before the first paint; this module keeps it up to date when the
// choice or the system's preference changes.

const KEY = "cadre.theme";
const CHOICES = ["system", "light", "dark"];
const systemDark = window.matchMedia("(prefers-color-scheme: dark)");

export function themeChoice() {
  try {
    const stored = localStorage.getItem(KEY);
    return CHOICES.includes(stored) ? stored : "system";
  } catch {
    return "system";
  }
}

/** "light" or "dark": what the page shows for `choice`. */
export function resolvedTheme(choice = themeChoice()) {
  if (choice === "system") return systemDark.matches ? "dark" : "light";
  return choice;
}

export function applyTheme() {
  document.documentElement.dataset.theme = resolvedTheme();
}

export function setThemeChoice(choice) {
  if (!CHOICES.includes(choice)) throw new Error(`unknown theme: ${choice}`);
  try {
    if (choice === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // Not remembered (storage refused); still applied to this page.
  }
  document.documentElement.dataset.theme = resolvedTheme(choice);
}

/** Bind the Theme menu, and follow the system while the choice is "system". */
export function mountThemeSwitch(select) {
  select.value = themeChoice();
  select.addEventListener("change", () => setThemeChoice(select.value));
  systemDark.addEventListener("change", applyTheme);
  // Another tab changed the choice.
  window.addEventListener("storage", (event) => {
    if (event.key !== KEY && event.key !== null) return;
    select.value = themeChoice();
    applyTheme();
  });
}
