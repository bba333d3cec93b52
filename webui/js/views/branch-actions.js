// "Branch from here" on every item of the log: a new chat holding this one as it stood
// at that item (every agent's memory, the log, the delegation tree), listed under it in
// the sidebar. log-item.js puts the button in each item's header (`branchButton`);
// `mountBranches` answers its clicks. The server does the cut (core/chat_cut.py).

import { h } from "../dom.js";

/** The button in an item's header (log-item.js calls this as it builds the head). */
export function branchButton(item) {
  const button = h("button", {
    type: "button", class: "li-branch btn small ghost", testid: "branch-here",
    title: "Start a new chat from this point: everything up to here is kept, this chat stays as it is",
    "aria-label": "Branch from here: a new chat that goes on from this point",
  }, "Branch");
  button.addEventListener("click", () => button.dispatchEvent(new CustomEvent("cadre:branch", {
    bubbles: true, detail: { no: item.no },
  })));
  return button;
}

export function mountBranches(root, { chats, notices }) {
  let busy = false;
  root.addEventListener("cadre:branch", async (event) => {
    const chatId = chats.selectedId;
    if (!chatId || busy) return;
    busy = true;
    try {
      const made = await chats.branch(chatId, event.detail.no);
      notices.push({ title: "Branched", message: `“${made.name}” goes on from that point.`, type: "success" });
    } catch (err) {
      notices.error(err, "Not branched");
    } finally {
      busy = false;
    }
  });
}
