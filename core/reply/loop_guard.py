"""Stopping a monologue that goes round in circles.

A tool call that runs is no sign of progress by itself: a small model was seen
alternating `memory_save` and `memory_load` with the same arguments 35 times in
one run, and since every call that ran reset the unusable-reply count, nothing
stopped it. Here a call counts as a repeat when the same tool was called with
the same arguments earlier in the same monologue; for a tool that runs commands
(`Tool.repeat_progress == "new_result"`) only when it also gave the same result,
and never for waiting, since waiting again is how a build is waited for. The
model is told of each repeat; after `max_repeated_calls` of them the run stops
with a plain message.

A small model told of a repeat often repeats again (the same `ls -la` three
times, with its result right there). Where its replies are held to a grammar
(a local model), the guard's `answer_now` then narrows the next reply to the
`response` tool: the model answers with what it already has.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


def call_key(tool: str, args: dict[str, Any], result: str | None) -> str:
    """A fingerprint of one call (and of its result, for a polling tool)."""
    data = json.dumps([tool, args, result], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class LoopGuard:
    """The calls of one monologue, and how many of them were repeats."""

    seen: set[str] = field(default_factory=set)
    repeats: int = 0
    #: The tools that were repeated, in order of their first repeat (for the message).
    repeated_tools: list[str] = field(default_factory=list)
    #: The model repeated itself: hold its next reply to the `response` tool (where a
    #: reply schema is enforced, see Agent._reply_schema).
    answer_now: bool = False

    def record(self, tool: str, args: dict[str, Any], result: str | None) -> bool:
        """Note a call that ran; True when it repeats an earlier one (no progress)."""
        key = call_key(tool, args, result)
        if key not in self.seen:
            self.seen.add(key)
            return False
        self.repeats += 1
        self.answer_now = True
        if tool not in self.repeated_tools:
            self.repeated_tools.append(tool)
        return True
