// Where an item's element goes in its container: in `no` order, and a sibling's
// items (subordinates working at once, A1.1, A1.2) in a block of their own inside
// the delegation that started them, the blocks in task order.

import { h } from "../dom.js";

/** The block of sibling `item.agent` inside a delegation's `body`, made at its first item;
 * the blocks stand in task order (A1.1, A1.2, ...), whichever began first, and before
 * the items that belong to none of them (a message to all the siblings), which the
 * stylesheet draws across the whole width, below the blocks. */
export function siblingBlock(body, item, task = null) {
  let after = null;
  for (const child of body.children) {
    if (child.dataset.sibling === item.agent) return child;
    const later = !child.dataset.sibling || siblingIndex(child.dataset.sibling) > siblingIndex(item.agent);
    if (!after && later) after = child;
  }
  const block = h("section", {
    class: "sibling-block",
    testid: "sibling-block",
    data: { sibling: item.agent },
    "aria-label": `Work of ${item.agent}`,
  }, h("h4", { class: "sibling-name", title: task?.message || null }, item.agent,
    // Its task (and profile) from the call: the block says what it works on.
    task?.profile ? h("span", { class: "sibling-task" }, ` · ${task.profile}`) : null,
    task?.message ? h("span", { class: "sibling-task" }, ` · ${task.message}`) : null));
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
