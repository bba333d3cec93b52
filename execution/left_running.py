"""A command left running after its call stopped waiting is stopped a while later.

A call waits for its command at most `code_exec_max_timeout` seconds (less when
the command stays silent); the agent then hears that it still runs, and may
wait more with runtime `output`. A command nobody waits for again would run on
for ever: a `yes` left behind kept Cadre busy for over a minute. So when a call
stops waiting while its command runs, a timer starts. If no call waits for the
session again within `code_exec_stop_after` seconds, the command is
interrupted as Ctrl-C would; if the run has not ended `GRACE` seconds later
(a program that ignores Ctrl-C, a terminal in raw mode), the whole session is
ended. The agent reads what happened with the session's next result.

A command put in the background on purpose (`server &`) is not the call's
command: it is left alone, as the shell is ready again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

#: Seconds an interrupted command has to end before its session is ended.
GRACE = 3.0


class LeftRunning:
    """The timer of one session (see the module docstring)."""

    def __init__(
        self,
        after: float,
        interrupt: Callable[[], None],
        still_running: Callable[[], bool],
        stop: Callable[[str], None],
        notice: Callable[[str], None],
    ) -> None:
        #: Seconds after the call stopped waiting (0: never stopped).
        self.after = after
        self._interrupt, self._still_running = interrupt, still_running
        self._stop, self._notice = stop, notice
        self._timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        """The call stopped waiting while its command runs."""
        self.disarm()
        if self.after > 0:
            self._timer = asyncio.get_running_loop().call_later(self.after, self._fire)

    def disarm(self) -> None:
        """A call waits for the session again (or it ended)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        if not self._still_running():
            return
        log.info("a command left running %gs after its call was interrupted", self.after)
        self._interrupt()
        self._notice(
            f"The command nobody waited for was interrupted (Ctrl-C) {self.after:g} s after "
            "its call stopped waiting (setting code_exec_stop_after)."
        )
        self._timer = asyncio.get_running_loop().call_later(GRACE, self._end)

    def _end(self) -> None:
        self._timer = None
        if self._still_running():
            self._stop(
                f"its command was still running {self.after:g} s after its call stopped "
                f"waiting and did not stop when interrupted (setting code_exec_stop_after)"
            )
