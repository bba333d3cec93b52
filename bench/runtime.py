"""The agents' loop: framework overhead per iteration, the model client's own cost, import
time, fifty chats at once, memory, and the size of Agent 0's system prompt.

Everything runs against the fake model server, in this process.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import Row
from tests.support.agents import ECHO_TOOL, answer, make_profile, reply
from tests.support.fake_llm import Reply, start_fake_llm


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def point_at(llm) -> None:  # type: ignore[no-untyped-def]
    for prefix in ("CHAT", "UTIL"):
        os.environ[f"CADRE_{prefix}_MODEL"] = f"openai/{prefix.lower()}-model"
        os.environ[f"CADRE_{prefix}_API_BASE"] = llm.base_url
        os.environ[f"CADRE_{prefix}_API_KEY"] = "bench"
    os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"


def loop_overhead(runtime, llm, runs: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median framework time per iteration (ms), and the model client's median per call."""
    from agent import AgentContext, UserMessage
    from helpers import llm as llm_module
    from initialize import initialize_agent

    inside: list[float] = []
    original = llm_module.ChatModel.stream

    async def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        try:
            return await original(self, *args, **kwargs)
        finally:
            inside.append(time.perf_counter() - began)

    llm_module.ChatModel.stream = timed  # type: ignore[method-assign]
    try:
        context = AgentContext(initialize_agent({"agent_profile": "echoer"}), runtime)
        per_iteration = []
        for n in range(runs):
            llm.script(Reply(reply("echo", text=f"x{n}"), chunk_size=4096),
                       Reply(answer(f"done {n}"), chunk_size=4096))  # fmt: skip
            began, before = time.perf_counter(), len(inside)
            context.communicate(UserMessage(f"go {n}")).result(30)
            wall = time.perf_counter() - began
            model = sum(inside[before:])
            per_iteration.append((wall - model) / 2)
    finally:
        llm_module.ChatModel.stream = original  # type: ignore[method-assign]
    return statistics.median(per_iteration) * 1000, statistics.median(inside) * 1000


def client_cost(llm, chunks: int = 100, repeat: int = 10) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """A `chunks`-chunk streamed reply read by litellm, and by a plain httpx SSE reader (ms)."""
    import httpx

    from helpers.llm import litellm_module

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
    """Overlap factor of 50 chats streaming at once (20 ms a chunk), and items exactly once."""
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
    began = time.perf_counter()
    handles = [c.communicate(UserMessage(f"chat {n}")) for n, c in enumerate(contexts)]
    for handle in handles:
        handle.result(120)
    wall = time.perf_counter() - began
    exact = all(
        [i.type for i in c.log.items] == ["user", "agent", "response"]
        and len({i.no for i in c.log.items}) == len(c.log.items)
        for c in contexts
    )
    return 50 * single / wall, exact


def run(quick: bool) -> list[Row]:
    from agent import AgentContext
    from helpers.runtime import AgentRuntime
    from helpers.system_prompt import build_system_prompt
    from helpers.tokens import count_tokens
    from initialize import initialize_agent

    imported = []
    for _ in range(3):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import agent"], check=True, cwd=Path.cwd())
        imported.append(time.perf_counter() - began)

    llm = start_fake_llm()
    point_at(llm)
    make_profile(Path(os.environ["CADRE_USR_DIR"]), "echoer", tools={"echo": ECHO_TOOL})
    runtime = AgentRuntime().start()
    try:
        idle = rss_mb()
        framework, model = loop_overhead(runtime, llm, 100 if quick else 500)
        litellm_ms, httpx_ms = client_cost(llm, repeat=5 if quick else 20)
        overlap, exact = fifty_at_once(runtime, llm)
        loaded = rss_mb()
        prompts = {}
        for label, settings in (("", {}), (" (compact, small window)", {"chat_ctx_length": 8192})):
            context = AgentContext(initialize_agent(settings))
            prompts[label] = count_tokens(asyncio.run(build_system_prompt(context.agent0)))
    finally:
        runtime.stop()
        llm.stop()
    rows = [
        Row("loop: framework time per iteration (model call excluded), median", framework,
            "ms", 2.0),
        Row("loop: the model client's call, median (fake model, tiny reply)", model, "ms"),
        Row("100-chunk streamed reply read by litellm", litellm_ms, "ms"),
        Row("the same read by a plain httpx SSE reader", httpx_ms, "ms"),
        Row("`import agent` in a fresh process, median", statistics.median(imported), "s"),
        Row("50 chats at once, 20 ms a chunk: overlap factor (50 x one chat / wall)", overlap,
            "x", higher_is_better=True),
        Row("50 chats at once: every log item exactly once", 1.0 if exact else 0.0, "yes",
            1.0, higher_is_better=True),
        Row("memory: resident, runtime started", idle, "MB"),
        Row("memory: resident, 51 chats loaded after the runs", loaded, "MB"),
    ]  # fmt: skip
    rows += [Row(f"Agent 0's system prompt{label}", tokens, "tokens", 2500)
             for label, tokens in prompts.items()]  # fmt: skip
    return rows
