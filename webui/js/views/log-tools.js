// The bar above the log: the "Show utility steps" switch, remembered by the page.
// Utility-model calls (naming the chat, memorizing, summaries) are `util` items;
// the log leaves them out unless this is on.

import { h } from "../dom.js";

/** Where the page remembers the switch. */
const KEY = "cadre.log.showUtility";

function remembered() {
  try {
    return localStorage.getItem(KEY) === "1";
  } catch {
    return false; // storage refused (a private window): the default then
  }
}

function remember(on) {
  try {
    localStorage.setItem(KEY, on ? "1" : "0");
  } catch {
    // Not remembered; the switch still works for this page.
  }
}

export class LogTools {
  /** `onChange(showUtility)` is called when the user flips the switch. */
  constructor(onChange) {
    this.showUtility = remembered();
    this.box = h("input", { type: "checkbox", class: "log-switch-box", testid: "show-utility" });
    this.box.checked = this.showUtility;
    this.box.addEventListener("change", () => {
      this.showUtility = this.box.checked;
      remember(this.showUtility);
      onChange(this.showUtility);
    });
    this.count = h("span", { class: "log-switch-count" });
    const label = h("label", {
      class: "log-switch", title: "Utility-model calls: naming the chat, memorizing, summaries",
    }, this.box, " Show utility steps", this.count);
    this.el = h("div", { class: "log-tools", testid: "log-tools" }, label);
  }

  /** Say how many utility items the chat has; the bar hides while it has none. */
  setUtilityCount(n) {
    this.el.hidden = n === 0 && !this.showUtility;
    this.count.textContent = n && !this.showUtility ? ` (${n} hidden)` : "";
  }
}
