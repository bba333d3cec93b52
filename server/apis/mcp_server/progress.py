"""The steps of a chat's run as one-line texts, for a caller waiting on its own event loop.

The MCP server tells a client that asked for progress what the agents do
while it waits for the answer: one line per finished log step ("A1: Using
tool 'search_engine'"), taken from the chat's log. A step is told once
its heading is final: when a later item follows it, or at once for the kinds
whose heading is set when they are made (a tool's item names its tool; a
model reply's item shows "Generating..." until its headline arrives).

The A2A endpoint tells the same steps as a task's status updates: `answer_with_steps`
is that wait, for both.

The log tells its subscribers on the agents' thread with its lock held, for
every streamed chunk: the subscriber here only flags the change (one hop to
the caller's loop per batch of changes), and the caller reads the log itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from server.apis import agent_calls
from server.apis.log_cursor import LogCursor

if TYPE_CHECKING:
    from core.log import Log, LogItem

#: Kinds never told: the message itself, and the toasts meant for the page.
UNTOLD = frozenset({"user", "notify"})
#: Kinds whose heading changes as the model streams: told once a later item follows.
STREAMED = frozenset({"agent", "response"})
#: Seconds to let a burst of changes settle before reading the log.
SETTLE = 0.05
#: Seconds the last steps may take to be told once the answer is there.
TELL_LIMIT = 10.0


class RunProgress:
    """Watch `log` from its item `start` on (default: from now); `steps()` yields each
    step's line on the caller's loop."""

    def __init__(self, log: Log, loop: asyncio.AbstractEventLoop, start: int | None = None) -> None:
        self._log = log
        self._loop = loop
        self._changed = asyncio.Event()
        self._flagged = threading.Event()
        self._done = False
        self._ended = asyncio.Event()
        with log.lock:
            self._cursor = LogCursor(log, start)
            self._unsubscribe = log.subscribe(self._on_change)

    def _on_change(self, _item: LogItem) -> None:
        # Called inside the agents' log changes: it must never raise into them.
        if self._flagged.is_set() or self._loop.is_closed():
            return  # one hop per batch, not one per chunk
        self._flagged.set()
        try:
            self._loop.call_soon_threadsafe(self._changed.set)
        except RuntimeError:  # the loop closed just now (shutdown): nobody waits any more
            pass

    def finish(self) -> None:
        """The run has answered (call on the caller's loop): `steps()` tells what is left,
        the last steps included, and ends."""
        self._done = True
        self._ended.set()
        self._changed.set()

    def close(self) -> None:
        """Stop watching (call once the wait is over)."""
        with self._log.lock:
            self._unsubscribe()

    async def steps(self) -> AsyncIterator[str]:
        """Each finished step's line, as the run goes, until `finish()`."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            self._flagged.clear()
            if not self._done:  # let the burst settle, unless the run answers meanwhile
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ended.wait(), SETTLE)
            done = self._done
            for line in self._lines(final=done):
                yield line
            if done:
                return

    def _lines(self, final: bool) -> list[str]:
        """The lines of the items finished since the last call (`final`: the run is over)."""
        return [item.heading or f"A{item.agentno}: {item.type}"
                for item in self._cursor.take(final, STREAMED)
                if item.type not in UNTOLD]  # fmt: skip


async def answer_with_steps(
    started: agent_calls.Started, tell: Callable[[str], Awaitable[None]]
) -> agent_calls.Answer:
    """Wait for the answer to the started run; meanwhile `tell` each finished step's line,
    every step told before the answer is returned."""
    # From the message on: the run's first steps may be logged before this line runs.
    progress = RunProgress(started.chat.log, asyncio.get_running_loop(), started.log_start)

    async def tell_all() -> None:
        async for line in progress.steps():
            await tell(line)

    teller = asyncio.create_task(tell_all())
    try:
        answer = await agent_calls.await_answer(started, agent_calls.WAIT_LIMIT)
        progress.finish()
        await asyncio.wait_for(teller, TELL_LIMIT)
        return answer
    except BaseException:
        teller.cancel()
        raise
    finally:
        progress.close()
