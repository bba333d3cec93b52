"""The parts of reading one streamed model call: think tags, and the call's time bounds.

`ThinkSplitter` separates a leading `<think>` span from the reply across chunk
borders. `CallClock` holds the bounds of a whole call (`llm_timeout`, the
first chunk's wait) and says what a wait that ran out means (`TryFailed`:
retried or not); `ChunkBound` keeps the deadline of a stream's next chunk with
one timeout scope, moved lazily, since moving a timer on every chunk would
cost the shared event loop more than reading the chunk does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.llm import ModelConfig

__all__ = [
    "SLACK",
    "YIELD_EVERY",
    "CallClock",
    "ChunkBound",
    "Expired",
    "ThinkSplitter",
    "TryFailed",
    "within",
]

#: Seconds a silent stream may outlast its bound before it is ended (see `ChunkBound`).
SLACK = 1.0
#: Seconds of reading buffered chunks back to back before the loop is yielded to.
YIELD_EVERY = 0.005


class ThinkSplitter:
    """Separates a leading `<think>…</think>` span from the reply, across chunk borders.

    Only a tag before any reply text counts: models put their reasoning
    first, and a `<think>` later on is part of the answer (say, inside a
    JSON string about HTML).
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.inside = False
        self.replied = False
        self._pending = ""

    def feed(self, text: str) -> tuple[str, str]:
        """Returns (reply text, reasoning text) that can be released now."""
        data = self._pending + text
        self._pending = ""
        reply: list[str] = []
        thought: list[str] = []
        while data:
            if self.replied and not self.inside:
                reply.append(data)
                break
            tag = self.CLOSE if self.inside else self.OPEN
            at = data.find(tag)
            if at >= 0 and (self.inside or not data[:at].strip()):
                (thought if self.inside else reply).append(data[:at])
                data = data[at + len(tag) :]
                self.inside = not self.inside
                continue
            # Hold back a tail that may be the start of a tag split across chunks.
            keep = next((n for n in range(len(tag) - 1, 0, -1) if data.endswith(tag[:n])), 0)
            released = data[: len(data) - keep]
            if self.inside:
                thought.append(released)
            else:
                reply.append(released)
                if released.strip():
                    self.replied = True
                    reply.append(data[len(released) :])
                    break
            self._pending = data[len(data) - keep :]
            break
        return "".join(reply), "".join(thought)

    def flush(self) -> tuple[str, str]:
        pending, self._pending = self._pending, ""
        return ("", pending) if self.inside else (pending, "")


class TryFailed(Exception):  # noqa: N818 - a carrier inside the model client
    """One try failed: what to tell, whether another try may help, and the provider's error."""

    def __init__(self, message: str, retryable: bool, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.cause = cause


class Expired(Exception):  # noqa: N818 - a signal inside the model client
    """A wait ran past its deadline."""


class CallClock:
    """The time bounds of one call, as event-loop times."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._loop = asyncio.get_running_loop()
        #: When the whole call must be over (llm_timeout).
        self.end = self._loop.time() + config.timeout

    def now(self) -> float:
        return self._loop.time()

    def left(self) -> float:
        return self.end - self._loop.time()

    def first_chunk(self) -> float:
        """The deadline of a try's first chunk, from now."""
        return min(self._loop.time() + self.config.first_chunk_timeout, self.end)

    def too_long_message(self) -> str:
        return (
            f"the model call took longer than {self.config.timeout:g} s (llm_timeout) and was ended"
        )

    def failure(self, until: float, started: bool) -> TryFailed:
        """What a wait that ran out at `until` means."""
        if until >= self.end:
            return TryFailed(self.too_long_message(), retryable=False)
        if not started:
            return TryFailed(
                f"the model sent nothing within {self.config.first_chunk_timeout:g} s "
                "(llm_first_chunk_timeout)",
                retryable=True,
            )
        return TryFailed(
            f"the model stopped sending for {self.config.between_chunks_timeout:g} s "
            "in the middle of its reply (llm_between_chunks_timeout); the call was ended",
            retryable=False,
        )


class ChunkBound:
    """The deadline of a stream's next chunk, kept by one timeout scope for the stream.

    Moving a timer costs more than taking a chunk, so the scope's deadline moves
    only when it no longer lies between the exact one (`until`) and a little
    after it: a silent stream is ended at most `SLACK` late (a tenth of the
    bound if that is smaller), never early.
    """

    def __init__(self, clock: CallClock, first: float) -> None:
        self.clock = clock
        #: When the next chunk is due, exactly (first: the first chunk's deadline).
        self.until = first
        self.scope = asyncio.timeout_at(first)
        self.slack = min(SLACK, clock.config.between_chunks_timeout / 10)
        #: When reading should next let the other tasks of the loop run.
        self.yield_at = clock.now() + YIELD_EVERY

    def chunk_arrived(self) -> float:
        """A chunk came: the next is due from now. Returns now."""
        now = self.clock.now()
        until = self.until = min(now + self.clock.config.between_chunks_timeout, self.clock.end)
        when = self.scope.when() or 0.0
        if not until <= when <= until + self.slack:
            self.scope.reschedule(min(until + self.slack, self.clock.end))
        return now


async def within(until: float, awaitable: Awaitable[Any]) -> Any:
    """Await `awaitable`, but no later than the loop time `until` (`Expired` then)."""
    scope = asyncio.timeout_at(until)
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise Expired() from None
        raise  # the provider's own timeout: a provider error like any other
