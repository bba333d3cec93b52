"""The agents' loop: framework overhead per iteration, the model client's share, import
time, fifty chats at once, and the size of Agent 0's system prompt (the clients compared
with each other and with a plain reader: bench/models.py).

Everything runs against the fake model server, in this process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from bench.harness import Row, provider_env
from tests.support.agents import ECHO_TOOL, answer, backdate, make_profile, reply
from tests.support.fake_llm import Reply, start_fake_llm


def point_at(llm) -> None:  # type: ignore[no-untyped-def]
    os.environ.update(provider_env(llm.base_url))
    os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"


def from_litellm(task: asyncio.Task) -> bool:  # type: ignore[type-arg]
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and f"{os.sep}litellm{os.sep}" in code.co_filename


class Timed:
    """A `Model` (the model seam) that times each call of another, or answers from
    `queue` in this process (`inner` None: no client, no HTTP)."""

    name = "timed"

    def __init__(self, config, inner, queue: deque[str], inside: list[float]) -> None:  # type: ignore[no-untyped-def]
        self.config, self.inner, self.queue, self.inside = config, inner, queue, inside

    async def stream(self, messages, on_chunk=None, on_usage=None, schema=None, on_retry=None,  # type: ignore[no-untyped-def]
                     max_tokens=None):  # fmt: skip
        from models.llm import ModelReply, Usage

        began = time.perf_counter()
        before = asyncio.all_tasks()
        try:
            if self.inner is not None:
                return await self.inner.stream(
                    messages, on_chunk, on_usage, schema, on_retry, max_tokens
                )
            text = self.queue.popleft()
            if on_chunk is not None:
                await on_chunk(text, "")
            usage = Usage(prompt_tokens=1000, completion_tokens=20, calls=1)
            if on_usage is not None:
                on_usage(usage)
            return ModelReply(text, "", usage)
        finally:
            # litellm finishes a stream's bookkeeping (logging, cost) in tasks of
            # its own after the last chunk: that is the client's time, not ours.
            leftover = [t for t in asyncio.all_tasks() - before if from_litellm(t)]
            await asyncio.gather(*leftover, return_exceptions=True)
            self.inside.append(time.perf_counter() - began)

    async def complete(self, messages, on_usage=None, schema=None, max_tokens=None):  # type: ignore[no-untyped-def]
        return await self.stream(messages, None, on_usage, schema, max_tokens=max_tokens)

    async def embed(self, texts, on_usage=None):  # type: ignore[no-untyped-def]
        raise NotImplementedError("the loop benchmark embeds nothing")

    def count_tokens(self, text: str) -> int:
        from models.tokens import count_tokens

        return count_tokens(text)


def loop_overhead(  # type: ignore[no-untyped-def]
    runtime, llm, runs: int, per_chat: int, in_process: bool = False
) -> tuple[float, float]:
    """Median framework time per iteration (ms), and the model client's median per call (ms).

    Each run is a user message whose first reply calls the `echo` tool and
    whose second answers (two iterations); a new chat starts every `per_chat`
    runs. `in_process`: the model is a queue of replies in this process (no
    client, no HTTP), so the whole iteration is the framework's.
    """
    from core.agent_types import UserMessage
    from core.chat import Chat
    from initialize import agent_config
    from models.model import for_config

    inside: list[float] = []
    queue: deque[str] = deque()

    def timed(config):  # type: ignore[no-untyped-def]
        return Timed(config, None if in_process else for_config(config), queue, inside)

    per_iteration = []
    for n in range(runs):
        if n % per_chat == 0:
            config = agent_config({"agent_profile": "echoer"})
            context = Chat(dataclasses.replace(config, model_for=timed), runtime)
        replies = (reply("echo", text=f"x{n}"), answer(f"done {n}"))
        if in_process:
            queue.extend(replies)
        else:
            llm.script(*(Reply(text, chunk_size=4096) for text in replies))
        began, before = time.perf_counter(), len(inside)
        context.communicate(UserMessage(f"go {n}")).result(30)
        wall = time.perf_counter() - began
        per_iteration.append((wall - sum(inside[before:])) / 2)
    return statistics.median(per_iteration) * 1000, statistics.median(inside) * 1000


def fifty_at_once(runtime, llm) -> tuple[float, bool]:  # type: ignore[no-untyped-def]
    """Overlap factor of 50 chats streaming at once (20 ms a chunk), and whether every
    change to every log reached a subscriber (as the web pusher is) exactly once, in order."""
    from core.agent_types import UserMessage
    from core.chat import Chat
    from initialize import agent_config

    text = answer("one two three four five six seven eight")
    pieces = [text[i : i + 12] for i in range(0, len(text), 12)]
    llm.script(Reply(pieces, delay=0.02))
    one = Chat(agent_config(), runtime)
    began = time.perf_counter()
    one.communicate(UserMessage("alone")).result(30)
    single = time.perf_counter() - began
    llm.script(*[Reply(pieces, delay=0.02) for _ in range(50)])
    contexts = [Chat(agent_config(), runtime) for _ in range(50)]
    heard: list[list[tuple[int, int]]] = [[] for _ in contexts]
    for context, changes in zip(contexts, heard, strict=True):
        context.log.subscribe(lambda item, changes=changes: changes.append((item.no, item.version)))
    began = time.perf_counter()
    handles = [c.communicate(UserMessage(f"chat {n}")) for n, c in enumerate(contexts)]
    for handle in handles:
        handle.result(120)
    wall = time.perf_counter() - began
    exact = all(
        [i.type for i in c.log.items] == ["user", "agent", "response"]
        # Versions count every change of the log: each one heard once, in order,
        # and the last one heard of each item is the state the log holds.
        and [v for _, v in changes] == list(range(1, c.log.version + 1))
        and dict(changes) == {i.no: i.version for i in c.log.items}
        for c, changes in zip(contexts, heard, strict=True)
    )
    return 50 * single / wall, exact


def run(quick: bool) -> list[Row]:
    from core.chat import Chat
    from core.prompt.system_prompt import build_system_prompt
    from helpers.runtime import AgentRuntime
    from initialize import agent_config
    from models.tokens import count_tokens

    imported = []
    for _ in range(3):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import agent"], check=True, cwd=Path.cwd())
        imported.append(time.perf_counter() - began)

    llm = start_fake_llm()
    point_at(llm)
    backdate(make_profile(Path(os.environ["CADRE_USR_DIR"]), "echoer", tools={"echo": ECHO_TOOL}))
    runtime = AgentRuntime().start()
    try:
        runs = 100 if quick else 500  # two iterations each
        loop_overhead(runtime, llm, 20, 10)  # warm: tool classes loaded, prompts parsed
        framework, model = loop_overhead(runtime, llm, runs, 10)
        in_process, _ = loop_overhead(runtime, llm, runs, 10, in_process=True)
        one_chat, _ = loop_overhead(runtime, llm, runs, runs, in_process=True)
        overlap, exact = fifty_at_once(runtime, llm)
        prompts = {}
        every = {"searxng_url": "http://127.0.0.1:8888"}  # every tool offered (search too)
        small = {"chat_ctx_length": 8192}
        for label, settings in ((", every tool", every), (" (compact, small window)", small)):
            context = Chat(agent_config(settings))
            prompts[label] = count_tokens(asyncio.run(build_system_prompt(context.agent0)))
    finally:
        runtime.stop()
        llm.stop()
    rows = [
        Row(f"loop: framework time per iteration, model client excluded, median of {2 * runs}"
            " (chats of 20)", framework, "ms", 2.0),
        Row("loop: the same with the model in this process (no client, no HTTP)", in_process,
            "ms"),
        Row(f"loop: the same in process, one chat of {2 * runs} iterations (history grows)",
            one_chat, "ms"),
        Row("loop: the model client's call with its own bookkeeping, median (tiny reply)",
            model, "ms"),
        Row("`import agent` in a fresh process, median", statistics.median(imported), "s"),
        Row("50 chats at once, 20 ms a chunk: overlap factor (50 x one chat / wall)", overlap,
            "x", higher_is_better=True),
        Row("50 chats at once: every log item exactly once", 1.0 if exact else 0.0, "yes",
            1.0, higher_is_better=True),
    ]  # fmt: skip
    rows += [Row(f"Agent 0's system prompt{label}", tokens, "tokens", 2000)
             for label, tokens in prompts.items()]  # fmt: skip
    return rows
