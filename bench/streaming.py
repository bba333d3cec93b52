"""A long streamed reply: the framework's time on the event loop per chunk, early in the
reply and once it is 100,000 characters long.

All chats share one event loop, so what a chunk costs it must not grow with the reply.
The model client's own work (litellm or the OpenAI SDK, HTTP) is left out: the agent's
models come, through the model seam (`AgentConfig.model_for`), from a client whose
transport is a stream of chunk objects made in this process, one every millisecond,
as a fast provider sends them; the clients' shared reading stays in. The time from handing a chunk
over to being asked for the next is the framework's: the client's reading, the live
display, the check points, the log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from bench.harness import Row, provider_env

#: Characters per streamed chunk (a few tokens).
CHUNK = 32
#: Seconds between two chunks, as a fast provider sends them.
PACE = 0.001
#: The windows compared: chunks whose text starts in [at, at + WINDOW) characters.
WINDOW = 8_000
EARLY, LATE = 0, 100_000


@dataclass
class ChunkTimes:
    """When each chunk was handed over, and when the next was asked for."""

    handed: list[float] = field(default_factory=list)
    asked: list[float] = field(default_factory=list)

    def per_chunk(self, first: int, last: int) -> float:
        """Mean framework seconds per chunk for chunks first..last-1."""
        spans = [self.asked[n + 1] - self.handed[n] for n in range(first, last)]
        return statistics.fmean(spans)


def _chunk(content: str | None = None, usage: tuple[int, int] | None = None) -> Any:
    if usage is not None:
        counts = SimpleNamespace(prompt_tokens=usage[0], completion_tokens=usage[1])
        return SimpleNamespace(choices=[], usage=counts)
    delta = SimpleNamespace(content=content, reasoning_content=None)
    return SimpleNamespace(choices=[SimpleNamespace(delta=delta)], usage=None)


class _Stream:
    """An in-process streamed completion that times the framework between its chunks."""

    def __init__(self, pieces: list[str], times: ChunkTimes) -> None:
        self.pieces = pieces
        self.times = times

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[Any]:
        for piece in self.pieces:
            self.times.asked.append(time.perf_counter())
            await asyncio.sleep(PACE)
            self.times.handed.append(time.perf_counter())
            yield _chunk(piece)
        self.times.asked.append(time.perf_counter())
        yield _chunk(usage=(1000, len(self.pieces) * CHUNK // 4))

    async def aclose(self) -> None:
        return None


def in_process_model(pieces: list[str], times: ChunkTimes) -> Any:
    """A `model_for` (the model seam) whose models answer every call with `pieces`,
    through the clients' shared machinery (reading, bounds, usage)."""
    from models.client import ModelClient

    class InProcess(ModelClient):
        name = "in-process"

        async def _request(self, messages: Any, schema: Any, max_tokens: Any) -> dict[str, Any]:
            return {}

        async def _send(self, request: dict[str, Any]) -> _Stream:
            return _Stream(pieces, times)

        async def _embed_once(self, texts: list[str]) -> tuple[list[list[float]], int]:
            raise NotImplementedError("this benchmark embeds nothing")

    return InProcess


def one_reply(runtime: Any, length: int) -> tuple[float, float]:
    """Mean framework seconds per chunk early in a `length`-character reply, and late."""
    from core.agent_types import UserMessage
    from core.chat import Chat
    from initialize import agent_config

    # The length is in the thoughts, which the page shows live: an answer that long would
    # be sent back to be shortened (tools/response.py ANSWER_MAX), and the run would fail.
    text = json.dumps({
        "thoughts": ["and so on, " * (length // 11)], "headline": "Answering",
        "tool_name": "response", "tool_args": {"text": "done"},
    })  # fmt: skip
    pieces = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
    times = ChunkTimes()
    config = dataclasses.replace(agent_config(), model_for=in_process_model(pieces, times))
    Chat(config, runtime).communicate(UserMessage("write it all")).result(120)
    early, late = EARLY // CHUNK, LATE // CHUNK
    return (
        times.per_chunk(early, early + WINDOW // CHUNK),
        times.per_chunk(late, late + WINDOW // CHUNK),
    )


def run(quick: bool) -> list[Row]:
    from helpers.runtime import AgentRuntime

    os.environ.update(provider_env("http://127.0.0.1:9/v1"))  # never called: see above
    os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"
    runtime = AgentRuntime().start()
    try:
        one_reply(runtime, LATE + WINDOW)  # warm: prompts read, tool classes loaded
        runs = [one_reply(runtime, LATE + WINDOW) for _ in range(1 if quick else 5)]
    finally:
        runtime.stop()
    early = statistics.median(r[0] for r in runs) * 1e6
    late = statistics.median(r[1] for r in runs) * 1e6
    return [
        Row(f"streamed reply: framework time per {CHUNK}-char chunk, first 8k characters",
            early, "µs"),
        Row("the same at 100k-108k characters", late, "µs"),
        Row("the same: at 100k / at the start (no growth: about 1)", late / early, "x", 1.5),
    ]  # fmt: skip
