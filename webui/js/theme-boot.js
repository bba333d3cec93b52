// The theme, set before the first paint: a classic script loaded (blocking) from
// <head>, so the page never flashes light before turning dark. The choice lives
// in localStorage (System, Light or Dark, see js/theme.js); "system" follows
// prefers-color-scheme. It only writes data-theme on <html>; app.css does the rest.
(function applyThemeBeforePaint() {
  var choice = "system";
  try {
    choice = localStorage.getItem("cadre.theme") || "system";
  } catch (err) {
    // Storage can be refused (privacy settings): follow the system then.
  }
  var dark = choice === "dark"
    || (choice !== "light" && window.matchMedia("(prefers-color-scheme: dark)").matches);
  document.documentElement.dataset.theme = dark ? "dark" : "light";
}());
