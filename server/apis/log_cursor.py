"""Reading a chat's log as its items settle: the one cursor behind the progress an
outside caller sees (the OpenAI endpoint's `reasoning_content`, the MCP server's
progress notifications).

An item is settled once a later item follows it or the run has ended: until then
a model reply's heading and thoughts still stream in. A log that starts over
(its guid changes: a reset) is read again from its start; items cut away are
skipped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.log import Log, LogItem


class LogCursor:
    """Where a reader of `log` is: the first item it has not taken yet."""

    def __init__(self, log: Log, start: int | None = None) -> None:
        self._log = log
        with log.lock:
            self._next = len(log.items) if start is None else start
            self._guid = log.guid

    def take(self, final: bool, streamed: Collection[str] | None = None) -> list[LogItem]:
        """Copies of the items settled since the last call. `final`: the run has ended, all
        are. `streamed`: the kinds whose last item is still open (None: every kind)."""
        log = self._log
        with log.lock:
            items = log.items
            if log.guid != self._guid:  # the log started over: all of it is new
                self._guid, self._next = log.guid, 0
            self._next = min(self._next, len(items))  # items cut away
            end = len(items)
            if not final and end > self._next:
                last = items[-1]
                if streamed is None or last.type in streamed:
                    end -= 1
            taken = [item.model_copy() for item in items[self._next : end]]
            self._next = end
        return taken
