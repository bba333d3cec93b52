"""Saving a chat while a long step runs and changes it, at a bounded pace.

A chat is saved after each loop iteration; a step that runs for minutes would
be lost whole by a process killed meanwhile. Saving on every change instead
would write the whole chat.json many times a second while a command streams
output, and once more per step for every quick tool. A `PacedSave` saves at
most once per `interval`, and never later than `interval` after a change, so
a killed process loses at most that much of a step; a step that ends sooner
is saved with its iteration and costs nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class PacedSave:
    """Calls `save` once per `interval` at most while `changed` keeps being called."""

    def __init__(self, save: Callable[[], Awaitable[None]], interval: float) -> None:
        self._save = save
        self._interval = interval
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Future[None] | None = None

    def changed(self) -> None:
        """Something worth saving changed: a save follows within `interval`."""
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._task is not None and not self._task.done():
            self.changed()  # the last save is still writing: the next one waits its turn
            return
        self._task = asyncio.ensure_future(self._save())

    async def close(self) -> None:
        """No more saves from here (the step's own end saves); a save writing now finishes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task})
