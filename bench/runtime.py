"""The agents' loop: framework overhead per iteration, the model client's own cost, import
time, fifty chats at once, and the size of Agent 0's system prompt.

Everything runs against the fake model server, in this process.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections import deque
from contextlib import contextmanager
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


@contextmanager
def model_call(replacement):  # type: ignore[no-untyped-def]
    """`ChatModel.stream` replaced by `replacement(original, self, ...)` for the block."""
    from models import llm as llm_module

    original = llm_module.ChatModel.stream

    async def call(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return await replacement(original, self, *args, **kwargs)

    llm_module.ChatModel.stream = call  # type: ignore[method-assign]
    try:
        yield
    finally:
        llm_module.ChatModel.stream = original  # type: ignore[method-assign]


def loop_overhead(  # type: ignore[no-untyped-def]
    runtime, llm, runs: int, per_chat: int, in_process: bool = False
) -> tuple[float, float]:
    """Median framework time per iteration (ms), and the model client's median per call (ms).

    Each run is a user message whose first reply calls the `echo` tool and
    whose second answers (two iterations); a new chat starts every `per_chat`
    runs. `in_process`: the model is a queue of replies in this process (no
    client, no HTTP), so the whole iteration is the framework's.
    """
    from agent import AgentContext, UserMessage
    from initialize import initialize_agent
    from models.llm import ModelReply, Usage

    inside: list[float] = []
    queue: deque[str] = deque()

    async def timed(original, self, messages, on_chunk=None, on_usage=None, schema=None):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        before = asyncio.all_tasks()
        try:
            if not in_process:
                return await original(self, messages, on_chunk, on_usage, schema)
            text = queue.popleft()
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
            inside.append(time.perf_counter() - began)

    per_iteration = []
    with model_call(timed):
        for n in range(runs):
            if n % per_chat == 0:
                context = AgentContext(initialize_agent({"agent_profile": "echoer"}), runtime)
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


def client_cost(llm, chunks: int = 100, repeat: int = 10) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """A `chunks`-chunk streamed reply read by litellm, and by a plain httpx SSE reader (ms)."""
    import httpx

    from models.llm import litellm_module

    litellm = litellm_module()
    pieces = [f"w{i} " for i in range(chunks)]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}

    async def with_litellm() -> float:
        llm.script(Reply(pieces))
        began = time.perf_counter()
        response = await litellm.acompletion(
            model="openai/m", messages=body["messages"], stream=True,
            api_base=llm.base_url, api_key="k",
        )  # fmt: skip
        async for _ in response:
            pass
        return time.perf_counter() - began

    async def with_httpx(client: httpx.AsyncClient) -> float:
        llm.script(Reply(pieces))
        began = time.perf_counter()
        async with client.stream("POST", f"{llm.base_url}/chat/completions", json=body) as answer:
            async for line in answer.aiter_lines():
                if line.startswith("data: [DONE]"):
                    break
        return time.perf_counter() - began

    async def both() -> tuple[list[float], list[float]]:
        async with httpx.AsyncClient() as client:
            a = [await with_litellm() for _ in range(repeat)]
            b = [await with_httpx(client) for _ in range(repeat)]
        return a, b

    a, b = asyncio.run(both())
    return statistics.median(a) * 1000, statistics.median(b) * 1000


def fifty_at_once(runtime, llm) -> tuple[float, bool]:  # type: ignore[no-untyped-def]
    """Overlap factor of 50 chats streaming at once (20 ms a chunk), and whether every
    change to every log reached a subscriber (as the web pusher is) exactly once, in order."""
    from agent import AgentContext, UserMessage
    from initialize import initialize_agent

    text = answer("one two three four five six seven eight")
    pieces = [text[i : i + 12] for i in range(0, len(text), 12)]
    llm.script(Reply(pieces, delay=0.02))
    one = AgentContext(initialize_agent(), runtime)
    began = time.perf_counter()
    one.communicate(UserMessage("alone")).result(30)
    single = time.perf_counter() - began
    llm.script(*[Reply(pieces, delay=0.02) for _ in range(50)])
    contexts = [AgentContext(initialize_agent(), runtime) for _ in range(50)]
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
    from agent import AgentContext
    from core.system_prompt import build_system_prompt
    from helpers.runtime import AgentRuntime
    from initialize import initialize_agent
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
        litellm_ms, httpx_ms = client_cost(llm, repeat=5 if quick else 20)
        overlap, exact = fifty_at_once(runtime, llm)
        prompts = {}
        for label, settings in (("", {}), (" (compact, small window)", {"chat_ctx_length": 8192})):
            context = AgentContext(initialize_agent(settings))
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
        Row("100-chunk streamed reply read by litellm", litellm_ms, "ms"),
        Row("the same read by a plain httpx SSE reader", httpx_ms, "ms"),
        Row("`import agent` in a fresh process, median", statistics.median(imported), "s"),
        Row("50 chats at once, 20 ms a chunk: overlap factor (50 x one chat / wall)", overlap,
            "x", higher_is_better=True),
        Row("50 chats at once: every log item exactly once", 1.0 if exact else 0.0, "yes",
            1.0, higher_is_better=True),
    ]  # fmt: skip
    rows += [Row(f"Agent 0's system prompt{label}", tokens, "tokens", 2500)
             for label, tokens in prompts.items()]  # fmt: skip
    return rows
