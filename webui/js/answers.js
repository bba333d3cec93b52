// Which step each answer belongs to. An answer is written by one step: the
// agent's `agent` item whose tool is "response", followed by the `response`
// item with the text. The log draws the two as one card, so the step needs no
// row of its own. Pure data, no DOM: the log view asks `stepOf` / `answerOf`.
// The pairing rests on the kinds and the step's tool name from Python, never on
// heading text.

import { agentKey, lowerBound } from "./nesting.js";

export class Answers {
  constructor() {
    /** agent (see `agentKey`) → ascending `no`s of its `agent` (step) items */
    this.steps = new Map();
    /** step `no` → answer `no`, and back */
    this.answerByStep = new Map();
    this.stepByAnswer = new Map();
  }

  /** Rebuild from a whole log (items by `no`, possibly with holes). */
  reset(items) {
    this.steps.clear();
    this.answerByStep.clear();
    this.stepByAnswer.clear();
    for (const item of items) if (item) this.add(item, items);
  }

  /** Note an item (new or changed); `items` is the log by `no`. */
  add(item, items) {
    if (item.type === "agent") {
      insertSorted(this.steps, agentKey(item), item.no);
    } else if (item.type === "response" && !this.stepByAnswer.has(item.no)) {
      const list = this.steps.get(agentKey(item)) || [];
      const index = lowerBound(list, item.no) - 1;
      const stepNo = index >= 0 ? list[index] : null;
      const step = stepNo === null ? null : items[stepNo];
      // The step that wrote this answer, unless another answer has it already.
      if (step && step.kvps.tool_name === "response" && !this.answerByStep.has(stepNo)) {
        this.answerByStep.set(stepNo, item.no);
        this.stepByAnswer.set(item.no, stepNo);
      }
    }
  }

  /** `no` of the step that wrote answer `no`, or null. */
  stepOf(no) {
    return this.stepByAnswer.get(no) ?? null;
  }

  /** `no` of the answer step `no` wrote, or null. */
  answerOf(no) {
    return this.answerByStep.get(no) ?? null;
  }
}

function insertSorted(map, key, no) {
  let list = map.get(key);
  if (!list) {
    list = [];
    map.set(key, list);
  }
  if (list.length === 0 || list[list.length - 1] < no) list.push(no);
  else if (!list.includes(no)) list.splice(lowerBound(list, no), 0, no);
}
