"""The agents' progress in a run, as text for an OpenAI client's `reasoning_content`.

`ProgressFeed` listens to a chat's log from the moment a call starts it. Each
log item becomes a few lines once it is settled, i.e. once a newer item exists
(a step's reply is complete when its tool starts) or the run has ended: an
agent's step gives its headline and thoughts, a subordinate's answer its text
(cut), every other kind its heading. Agent 0's answer is not progress (it is
the completion itself), nor are the user's messages and utility calls.

The log calls its subscribers with its lock held; the one here only puts the
item's number on a queue, and the reader formats on its own thread.
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING

from server.apis.log_cursor import LogCursor

if TYPE_CHECKING:
    from core.chat import Chat
    from core.log import LogItem

#: Characters of a subordinate's answer shown as progress.
ANSWER_CUT = 2000
#: Kinds that are no progress of the agents' work.
SKIPPED = frozenset({"user", "util"})
#: Put on the queue when the run has ended.
ENDED = -1


def describe(item: LogItem) -> str:
    """The progress text of one settled log item ('' for none)."""
    if item.type in SKIPPED or (item.type == "response" and item.agentno == 0):
        return ""
    lines = [item.heading.strip()] if item.heading.strip() else []
    if item.type == "agent":
        thoughts = item.kvps.get("thoughts")
        if isinstance(thoughts, list):
            lines += [f"- {str(t).strip()}" for t in thoughts if str(t).strip()]
    elif item.type == "response":
        content = item.content.strip()
        if len(content) > ANSWER_CUT:
            content = content[:ANSWER_CUT] + " …"
        lines += [content] if content else []
    return "\n".join(lines) + "\n\n" if lines else ""


class ProgressFeed:
    """The progress of one chat's log from item `start` on (create it on the agents' loop)."""

    def __init__(self, context: Chat) -> None:
        self.context = context
        self._cursor = LogCursor(context.log)
        self._wakes: queue.Queue[int] = queue.Queue()
        self._stop = context.log.subscribe(self._changed)

    def _changed(self, item: LogItem) -> None:
        self._wakes.put(item.no)

    def ended(self) -> None:
        """The run is over: every item is settled (from any thread)."""
        self._wakes.put(ENDED)

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` s for a change; True when the run has ended meanwhile."""
        try:
            woke = [self._wakes.get(timeout=timeout)]
        except queue.Empty:
            return False
        while True:  # take every change waiting, at once
            try:
                woke.append(self._wakes.get_nowait())
            except queue.Empty:
                return ENDED in woke

    def settled(self, everything: bool = False) -> str:
        """Progress text of the items settled since the last call (`everything`: the run
        has ended, so all are)."""
        return "".join(describe(item) for item in self._cursor.take(final=everything))

    def close(self) -> None:
        """Stop listening (from any thread: the log calls a copy of its subscriber list)."""
        self._stop()
