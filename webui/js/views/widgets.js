// Small building blocks of log items: long text shortened with "show all",
// and a key/value table for tool arguments.

import { h } from "../dom.js";
import { valueText } from "../render.js";
import { APPROVAL_KEYS } from "./log-approval.js";

/** A text box that shows at most `limit` characters until expanded. */
export function longText(cls, limit) {
  const el = h("div", { class: `long-text ${cls}` });
  el._limit = limit;
  el._text = "";
  el._expanded = false;
  el._span = h("span", { class: "long-text-body" });
  el._more = h("button", { type: "button", class: "link-btn long-text-more", testid: "expand" });
  el._more.addEventListener("click", () => {
    el._expanded = !el._expanded;
    paint(el);
  });
  el.append(el._span, el._more);
  el.hidden = true;
  return el;
}

/** Set the text of a `longText` box (keeps its expanded state). */
export function setLongText(el, text) {
  const value = text ?? "";
  if (el._text === value) return;
  el._text = value;
  paint(el);
}

function paint(el) {
  const text = el._text;
  const long = text.length > el._limit;
  const shown = long && !el._expanded ? `${text.slice(0, el._limit)}…` : text;
  if (el._span.textContent !== shown) el._span.textContent = shown;
  el._more.hidden = !long;
  el._more.textContent = el._expanded ? "Show less" : `Show all (${text.length.toLocaleString()} characters)`;
  el.hidden = text.length === 0;
}

/** An empty key/value table (filled by updateKvpsTable). */
export function kvpsTable() {
  const el = h("table", { class: "kvps", testid: "kvps" }, h("tbody"));
  el._rows = new Map();
  el.hidden = true;
  return el;
}

/** Show `kvps` (minus the `skip` keys) in `table`; rows are kept by key. */
export function updateKvpsTable(table, kvps, skip = []) {
  const body = table.tBodies[0];
  // A held call's question is its own part (log-approval.js), not an argument.
  const keys = Object.keys(kvps || {}).filter((k) => !skip.includes(k) && !APPROVAL_KEYS.includes(k));
  for (const [key, row] of table._rows) {
    if (!keys.includes(key)) {
      row.remove();
      table._rows.delete(key);
    }
  }
  for (const key of keys) {
    let row = table._rows.get(key);
    if (!row) {
      row = h("tr", {}, h("th", { scope: "row" }, key), h("td"));
      row._value = longText("kv-value", 300);
      row.cells[1].append(row._value);
      table._rows.set(key, row);
      body.append(row);
    }
    setLongText(row._value, valueText(kvps[key]));
    // An empty value still shows its row (an empty argument is information).
    row._value.hidden = false;
  }
  table.hidden = keys.length === 0;
}
