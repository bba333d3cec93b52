// The chat's log. Renders incrementally: each `log` event updates only the
// nodes of the items it carries (batched to one pass per frame), and only a
// window of the latest items is in the DOM ("Show earlier" adds more).
// Delegations nest: the work of agent N+1 sits inside the `subagent` item of
// agent N that asked for it (see nesting.js); siblings working at once (A1.1,
// A1.2) each get a block of their own in it. An answer is one card: the step
// that wrote it has no row of its own (see answers.js). Utility calls (naming
// the chat, memorizing) are left out unless the user switches them on.

import { Answers } from "../answers.js";
import { installCopyButtons } from "../copy.js";
import { frameScheduler, h } from "../dom.js";
import { agentKey, Nesting } from "../nesting.js";
import { forgetLogRenderers } from "../plugin-renderers.js";
import { ItemView } from "./log-item.js";
import { insertOrdered, plainText, siblingBlock, siblingIndex } from "./log-blocks.js";
import { LogTools } from "./log-tools.js";

/** Items rendered when a chat is opened, and added by each "Show earlier". */
export const WINDOW = 200;
/** Pixels from the bottom that still count as "following the end". */
const STICKY = 48;

export class LogView {
  constructor(root, { logStore, chats, tree }) {
    this.root = root;
    this.logStore = logStore;
    this.chats = chats;
    this.tree = tree;
    this.chatId = null;
    this.views = new Map();
    this.nesting = new Nesting();
    this.answers = new Answers();
    /** The "Show utility steps" switch, and the `no`s of the chat's utility items. */
    this.tools = new LogTools(() => this.rebuild());
    this.utilityNos = new Set();
    /** Handoffs in `no` order: [no, title of who talks from then on, or null when handed back]. */
    this.handoffs = [];
    this.start = 0;
    this.pending = new Set();
    this.lastAgentView = new Map();
    /** Whether the view follows the end of the log (the user has not scrolled up). */
    this.stuck = true;
    this.schedule = frameScheduler(() => this.flush());

    this.earlier = h("button", { type: "button", class: "btn small log-earlier", testid: "show-earlier" });
    this.earlier.addEventListener("click", () => this.showEarlier());
    this.list = h("div", { class: "log-list", testid: "log-list" });
    this.empty = h("div", { class: "log-empty", testid: "log-empty" });
    root.append(this.tools.el, this.earlier, this.list, this.empty);
    installCopyButtons(root);
    root.addEventListener("cadre:approve", (event) => {
      const { itemId, approved, reason, always } = event.detail;
      this.chats.approve(this.chatId, itemId, approved, { reason, always })
        .catch((err) => this.chats.emit("error", err));
    });
    // Only a move up lets go of the end: growth below never moves scrollTop up,
    // so the page's own scrolling cannot unstick the view by a late layout.
    let lastTop = 0;
    root.addEventListener("scroll", () => {
      const top = root.scrollTop;
      if (top < lastTop || !this.stuck) this.stuck = this.atEnd();
      lastTop = top;
    }, { passive: true });
    // Heights settle after the first layout (off-screen items are only estimated,
    // code is highlighted, fonts load): keep following the end meanwhile.
    new ResizeObserver(() => {
      if (this.stuck) this.scrollToEnd();
    }).observe(this.list);

    chats.on("selected", (chatId) => this.show(chatId));
    chats.on("sent", () => this.scrollToEnd());
    chats.on("state", (chatId) => {
      if (chatId === this.chatId && !chats.stateOf(chatId).running) this.settleAll();
    });
    logStore.on("change", (change) => this.onChange(change));
    tree.on("filter", () => this.rebuild());
    this.show(null);
  }

  show(chatId) {
    this.chatId = chatId;
    forgetLogRenderers(); // a plugin dropped into usr/plugins meanwhile draws this chat's items
    this.rebuild();
  }

  visible(item) {
    if (!item || item.type === "progress") return false;
    if (item.type === "util" && !this.tools.showUtility) return false;
    // The step that wrote an answer is drawn inside the answer's card.
    if (item.type === "agent" && this.answers.answerOf(item.no) !== null) return false;
    if (this.tree.filter === null || agentKey(item) === this.tree.filter) return true;
    // A message to several agents at once is also theirs (see core/runner.py _log_user).
    return item.type === "user" && Array.isArray(item.kvps.to) && item.kvps.to.includes(this.tree.filter);
  }

  onChange({ chatId, nos, reset }) {
    if (chatId !== this.chatId) return;
    if (reset || nos.length > WINDOW) {
      this.pending.clear();
      this.rebuild();
      return;
    }
    for (const no of nos) this.pending.add(no);
    if (this.pending.size) this.schedule();
  }

  /** Render the latest WINDOW visible items from scratch. */
  rebuild() {
    this.pending.clear();
    this.views.clear();
    this.lastAgentView.clear();
    this.list.replaceChildren();
    const items = this.chatId ? this.logStore.get(this.chatId).items : [];
    this.nesting.reset(items);
    this.answers.reset(items);
    this.utilityNos = new Set(items.filter((i) => i?.type === "util").map((i) => i.no));
    this.handoffs = [];
    for (const item of items) if (item) this.noteHandoff(item);
    const running = this.chatId ? this.chats.stateOf(this.chatId).running : false;
    const shown = [];
    for (let no = items.length - 1; no >= 0 && shown.length < WINDOW; no--) {
      if (this.visible(items[no])) shown.push(items[no]);
    }
    this.start = shown.length ? shown[shown.length - 1].no : items.length;
    // An agent whose newest item is a step still being written has it open.
    const live = new Set();
    const seen = new Set();
    for (const item of shown) {
      if (seen.has(agentKey(item))) continue;
      seen.add(agentKey(item));
      if (running && item.type === "agent") live.add(item.no);
    }
    for (let i = shown.length - 1; i >= 0; i--) {
      const item = shown[i];
      const view = this.ensure(item, live.has(item.no));
      if (item.type === "agent") this.lastAgentView.set(agentKey(item), view);
    }
    this.updateChrome();
    this.scrollToEnd();
  }

  /** The view of `item`, created (with its delegation ancestors) when missing. */
  ensure(item, live = false) {
    const known = this.views.get(item.no);
    if (known) return known;
    const container = this.containerFor(item);
    const view = new ItemView(item, { live, chatId: this.chatId, speaker: this.speakerOf(item) });
    const stepNo = this.answers.stepOf(item.no);
    if (stepNo !== null) {
      const items = this.logStore.get(this.chatId).items;
      if (items[stepNo]) view.setStep(items[stepNo]);
      this.drop(stepNo); // drawn as a row until its answer came
    }
    insertOrdered(container, view.el, item.no);
    this.views.set(item.no, view);
    return view;
  }

  /** A handoff's info item (tools/handoff.py): Agent 0 speaks as another profile after it. */
  noteHandoff(item) {
    if (item.type !== "info" || !item.kvps.handoff || this.handoffs.some(([no]) => no === item.no)) return;
    const title = item.kvps.back ? null : item.kvps.title || item.kvps.handoff;
    this.handoffs.push([item.no, title]);
    this.handoffs.sort((a, b) => a[0] - b[0]);
  }

  /** The profile Agent 0 spoke as when it wrote `item` after a handoff ("Researcher"), or null. */
  speakerOf(item) {
    if (item.agentno !== 0 || item.agent) return null;
    let title = null;
    for (const [no, handed] of this.handoffs) if (no < item.no) title = handed;
    return title;
  }

  /** Take item `no`'s view out of the log. */
  drop(no) {
    const view = this.views.get(no);
    if (!view) return;
    view.el.remove();
    this.views.delete(no);
    const key = agentKey(view.item);
    if (this.lastAgentView.get(key) === view) this.lastAgentView.delete(key);
  }

  containerFor(item) {
    if (this.tree.filter !== null) return this.list;
    const parentNo = this.nesting.parentOf(item);
    const parent = parentNo === null ? null : this.logStore.get(this.chatId).items[parentNo];
    if (!parent) return this.list;
    const body = this.ensure(parent).body;
    if (!body) return this.list;
    // Siblings (several at once) each get a block in the call that started them.
    const several = Array.isArray(parent.kvps.subordinates);
    if (!several || !item.agent) return body;
    // The task's text from the model's raw arguments (not checked: only text is shown), the
    // profile from the checked ones the call ran ("profile" or "agent_profile" in the call).
    const k = siblingIndex(item.agent) - 1;
    const tasks = Array.isArray(parent.kvps.tasks) ? parent.kvps.tasks : [];
    const profiles = Array.isArray(parent.kvps.profiles) ? parent.kvps.profiles : [];
    return siblingBlock(body, item, plainText(tasks[k]?.message), plainText(profiles[k]));
  }

  /** Apply the items changed since the last frame. */
  flush() {
    if (!this.chatId || this.pending.size === 0) return;
    const stick = this.stuck;
    const items = this.logStore.get(this.chatId).items;
    const nos = [...this.pending].sort((a, b) => a - b);
    this.pending.clear();
    for (const no of nos) {
      const item = items[no];
      if (!item) continue;
      this.nesting.add(item);
      this.answers.add(item, items);
      if (item.type === "util") this.utilityNos.add(no);
      this.noteHandoff(item);
      const answerNo = item.type === "agent" ? this.answers.answerOf(no) : null;
      if (answerNo !== null) {
        this.views.get(answerNo)?.setStep(item);
        continue;
      }
      const view = this.views.get(no);
      if (view) {
        if (view.item.type !== item.type) {
          this.rebuild(); // a kind changed: where things nest may change too
          return;
        }
        view.update(item);
      } else if (no >= this.start && this.visible(item)) {
        this.added(item);
      }
    }
    if (this.views.size > WINDOW * 2 && stick) {
      this.rebuild(); // a long live session: drop what scrolled far away
      return;
    }
    this.updateChrome();
    if (stick) this.scrollToEnd();
  }

  /** A new item arrived: show it, and fold the thoughts of its agent's previous step. */
  added(item) {
    const view = this.ensure(item, item.type === "agent");
    const previous = this.lastAgentView.get(agentKey(item));
    if (previous && previous !== view) previous.settle();
    if (item.type === "agent") this.lastAgentView.set(agentKey(item), view);
  }

  settleAll() {
    for (const view of this.lastAgentView.values()) view.settle();
  }

  /** Render WINDOW more of the earlier items, keeping what is on screen in place. */
  showEarlier() {
    const items = this.logStore.get(this.chatId).items;
    const before = this.root.scrollHeight;
    let added = 0;
    let no = this.start - 1;
    for (; no >= 0 && added < WINDOW; no--) {
      if (!this.visible(items[no])) continue;
      this.ensure(items[no]);
      this.start = no;
      added++;
    }
    this.updateChrome();
    this.root.scrollTop += this.root.scrollHeight - before;
  }

  /** The "Show earlier" button, the empty-state text and the filter mark. */
  updateChrome() {
    const items = this.chatId ? this.logStore.get(this.chatId).items : [];
    let hidden = 0;
    for (let no = 0; no < this.start; no++) {
      if (this.visible(items[no]) && !this.views.has(no)) hidden++;
    }
    this.earlier.hidden = hidden === 0;
    this.earlier.textContent = `Show ${Math.min(hidden, WINDOW)} earlier (${hidden} hidden)`;
    const empty = this.views.size === 0;
    this.empty.hidden = !empty;
    if (empty) {
      this.empty.textContent = !this.chatId
        ? "No chat selected. Write a message below to start one."
        : this.tree.filter !== null
          ? `Agent A${this.tree.filter} has no items in this chat.`
          : "No messages yet.";
    }
    this.root.classList.toggle("is-filtered", this.tree.filter !== null);
    this.tools.setUtilityCount(this.utilityNos.size);
  }

  atEnd() {
    const r = this.root;
    return r.scrollHeight - r.scrollTop - r.clientHeight < STICKY;
  }

  scrollToEnd() {
    this.stuck = true;
    this.root.scrollTop = this.root.scrollHeight;
  }
}
