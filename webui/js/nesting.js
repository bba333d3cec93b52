// Where each log item goes: work of agent N+1 nests under the latest `subagent`
// item of agent N that comes before it (the delegation it serves), to any depth.
// Pure data, no DOM: the log view asks `parentOf(item)`. Work resumed after a restart
// is not nested in a delegation that began before it.
// Siblings (subordinates working at once, "A1.1", "A1.2") share a number: their
// items name them (`item.agent`), and `agentKey` tells any agent's items apart.

/** The agent that wrote `item`: "A1.2" for a sibling, else "A<agentno>". */
export function agentKey(item) {
  return item.agent || `A${item.agentno}`;
}

/** The notice a chat restored after a restart gets (initialize.py): work after it is
 * drawn below it, not in a delegation's block above it. */
function isRestart(item) {
  return item.type === "info" && item.heading === "Interrupted";
}

export class Nesting {
  constructor() {
    /** agent number → ascending `no`s of its `subagent` items */
    this.delegations = new Map();
    /** name of an agent a delegation started ("A2.2") → ascending `no`s of those items */
    this.byName = new Map();
    /** ascending `no`s of restart notices */
    this.restarts = [];
  }

  /** Rebuild from a whole log (items by `no`, possibly with holes). */
  reset(items) {
    this.delegations.clear();
    this.byName.clear();
    this.restarts = [];
    for (const item of items) if (item) this.add(item);
  }

  /** Note an item (in any order, again when it changes); `subagent` items and restart
   * notices matter. */
  add(item) {
    if (isRestart(item) && !this.restarts.includes(item.no)) {
      this.restarts.splice(lowerBound(this.restarts, item.no), 0, item.no);
    }
    if (item.type !== "subagent") return;
    insertNo(this.delegations, item.agentno, item.no);
    // Named: agents that share a number (siblings, and what they delegate) tell
    // their delegation apart by the names it started.
    const started = item.kvps?.subordinates ?? [item.kvps?.subordinate];
    for (const name of started) {
      if (typeof name === "string" && name.includes(".")) insertNo(this.byName, name, item.no);
    }
  }

  /** `no` of the delegation (`subagent` item) `item` belongs to, or null (top level). */
  parentOf(item) {
    if (!item.agentno) return null;
    const list = (item.agent && this.byName.get(item.agent)) || this.delegations.get(item.agentno - 1);
    if (!list) return null;
    const index = lowerBound(list, item.no) - 1;
    if (index < 0) return null;
    // A restart between the delegation and the item: the work resumed after the notice
    // is drawn after it (in the block above, it read as done before the restart).
    const restart = this.restarts[lowerBound(this.restarts, item.no) - 1];
    return restart !== undefined && restart > list[index] ? null : list[index];
  }
}

/** Add `no` to the ascending list of `key` in `map` (once). */
function insertNo(map, key, no) {
  let list = map.get(key);
  if (!list) {
    list = [];
    map.set(key, list);
  }
  if (list.length === 0 || list[list.length - 1] < no) {
    list.push(no);
  } else if (!list.includes(no)) {
    list.splice(lowerBound(list, no), 0, no);
  }
}

/** First index in ascending `list` whose value is >= `value`. */
export function lowerBound(list, value) {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
