// How a step of the browser tool looks in the log (kind "browser"): the step's
// arguments, the page's title and URL, and a screenshot thumbnail that opens full
// size; the result (the page's text) folds under it.

import { h, setText } from "../dom.js";
import { kvpsTable, longText, setLongText, updateKvpsTable } from "./widgets.js";

/** kvps keys shown by their own parts, not in the arguments' table. */
const OWN_KEYS = ["title", "url", "screenshot", "status"];

/** Only the address Cadre serves a chat's browser screenshots at (server/routes/chat_browser.py). */
export function shotUrl(value) {
  const text = String(value ?? "");
  return /^\/api\/chats\/[\w-]+\/browser\/shots\/(page|step)-\d+\.(png|jpg)$/.test(text) ? text : null;
}

export const BROWSER = {
  build(view) {
    const p = view.parts;
    p.table = kvpsTable();
    p.pageTitle = h("div", { class: "li-browser-title", testid: "browser-title" });
    p.pageUrl = h("div", { class: "li-browser-url mono", testid: "browser-url" });
    // Hidden until there is a screenshot: no empty room beside the URL before the step ran.
    p.shot = h("div", { class: "li-browser-shot", testid: "browser-shot", hidden: true });
    p.result = longText("li-result mono", 1200);
    const page = h("div", { class: "li-browser-page" }, p.shot, h("div", {}, p.pageTitle, p.pageUrl));
    // A held step's question (log-approval.js) below the page it would open, as every
    // call's question comes after its arguments.
    p.approvalAfter = page;
    view.el.append(view.head, p.table, page, p.result);
  },
  update(view, item, prev) {
    const p = view.parts;
    if (!prev || JSON.stringify(prev.kvps) !== JSON.stringify(item.kvps)) {
      updateKvpsTable(p.table, item.kvps, OWN_KEYS);
      setText(p.pageTitle, item.kvps.title || "");
      setText(p.pageUrl, item.kvps.url || "");
      const url = shotUrl(item.kvps.screenshot);
      if (url !== (p.shotUrl ?? null)) {
        p.shotUrl = url;
        p.shot.hidden = !url;
        const label = `Screenshot of ${item.kvps.title || item.kvps.url || "the page"}`;
        p.shot.replaceChildren(url
          ? h("a", { href: url, target: "_blank", rel: "noopener", title: `${label}: open full size` },
            h("img", { src: url, alt: label, loading: "lazy", width: 160, height: 100 }))
          : "");
      }
    }
    if (!prev || prev.content !== item.content) setLongText(p.result, item.content);
  },
};
