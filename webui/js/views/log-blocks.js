// Where an item's element goes in its container: in `no` order, and a sibling's
// items (subordinates working at once, A1.1, A1.2) in a block of their own inside
// the delegation that started them, the blocks in task order.

import { h } from "../dom.js";

/** The longest task shown in a block's heading: a task can be a long prompt, and a
 * screen reader's list of headings reads each heading whole. */
const HEADING_TASK = 80;

/** A value from the model's raw arguments as text: a string, or a number or boolean written
 * out; anything else (an object, a list, nothing) is "" rather than "[object Object]". */
export function plainText(value) {
  if (typeof value === "string") return value;
  return typeof value === "number" || typeof value === "boolean" ? String(value) : "";
}

/** `text` on one line, cut to at most `limit` characters with an ellipsis (at a word's
 * end unless that loses more than half). */
function shortened(text, limit) {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= limit) return line;
  const cut = line.slice(0, limit - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > limit / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** The block of sibling `item.agent` inside a delegation's `body`, made at its first item;
 * the blocks stand in task order (A1.1, A1.2, ...), whichever began first, and before
 * the items that belong to none of them (a message to all the siblings), which the
 * stylesheet draws across the whole width, below the blocks. Its heading says what it
 * works on: `task` (the text given) cut short, and `profile` (the checked one it runs). */
export function siblingBlock(body, item, task = "", profile = "") {
  let after = null;
  for (const child of body.children) {
    if (child.dataset.sibling === item.agent) return child;
    const later = !child.dataset.sibling || siblingIndex(child.dataset.sibling) > siblingIndex(item.agent);
    if (!after && later) after = child;
  }
  const short = task ? shortened(task, HEADING_TASK) : "";
  const block = h("section", {
    class: "sibling-block",
    testid: "sibling-block",
    data: { sibling: item.agent },
    "aria-label": `Work of ${item.agent}`,
  }, h("h4", { class: "sibling-name", title: short !== task ? task : null }, item.agent,
    profile ? h("span", { class: "sibling-task" }, ` · ${profile}`) : null,
    short ? h("span", { class: "sibling-task" }, ` · ${short}`) : null));
  block._no = item.no;
  if (after) body.insertBefore(block, after);
  else insertOrdered(body, block, item.no);
  return block;
}

/** "A1.12" → 12. */
export function siblingIndex(name) {
  return Number(name.slice(name.lastIndexOf(".") + 1));
}

/** Put `el` among `container`'s children in `no` order (usually at the end). */
export function insertOrdered(container, el, no) {
  const last = container.lastElementChild;
  if (!last || last._no < no) {
    container.append(el);
    return;
  }
  for (let child = container.firstElementChild; child; child = child.nextElementSibling) {
    if (child._no > no) {
      container.insertBefore(el, child);
      return;
    }
  }
  container.append(el);
}
