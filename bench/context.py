"""A long chat against a small window: the largest prompt, the utility calls, compression time.

A 200-turn chat (each turn: a question, a tool call with a sizeable result,
an answer) runs through the real loop and litellm against the fake model
server, with an 8,000-token window.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.harness import Row
from core.prompt import context_window
from models.tokens import count_tokens
from tests.support.agents import ECHO_TOOL, answer, make_profile, reply
from tests.support.fake_llm import Reply, model_is, start_fake_llm

WINDOW = 8_000


def words(n: int, count: int) -> str:
    return " ".join(f"w{n}x{i}" for i in range(count))


def run(quick: bool) -> list[Row]:
    from core.agent_types import UserMessage
    from core.chat import Chat
    from helpers.runtime import AgentRuntime
    from initialize import agent_config

    turns = 60 if quick else 200
    llm = start_fake_llm()
    for prefix in ("CHAT", "UTIL"):
        os.environ[f"CADRE_{prefix}_MODEL"] = f"openai/{prefix.lower()}-model"
        os.environ[f"CADRE_{prefix}_API_BASE"] = llm.base_url
        os.environ[f"CADRE_{prefix}_API_KEY"] = "bench"
    make_profile(Path(os.environ["CADRE_USR_DIR"]), "echoer", tools={"echo": ECHO_TOOL})
    llm.add_rule(model_is("util-model"), Reply("Summary: " + words(0, 60), chunk_size=4096))
    for n in range(turns):
        llm.script(
            Reply(reply("echo", text=f"result {n} " + words(n, 120)), chunk_size=4096),
            Reply(answer(f"answer {n} " + words(n, 60)), chunk_size=4096),
        )

    spent = {"compressing": 0.0, "blocked": 0.0}
    compress, fit = context_window._compress, context_window.fit_history

    async def timed_compress(agent):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        try:
            await compress(agent)
        finally:
            spent["compressing"] += time.perf_counter() - began

    async def timed_fit(agent):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        try:
            await fit(agent)
        finally:
            spent["blocked"] += time.perf_counter() - began

    context_window._compress, context_window.fit_history = timed_compress, timed_fit
    runtime = AgentRuntime().start()
    try:
        settings = {"agent_profile": "echoer", "chat_ctx_length": WINDOW}
        context = Chat(agent_config(settings), runtime)
        began = time.perf_counter()
        for n in range(turns):
            context.communicate(UserMessage(f"question {n} " + words(n, 80))).result(120)
        wall = time.perf_counter() - began
    finally:
        context_window._compress, context_window.fit_history = compress, fit
        runtime.stop()
        llm.stop()
    agent_calls = [r for r in llm.chat_requests() if r.body["model"] != "util-model"]
    util_calls = [r for r in llm.chat_requests() if r.body["model"] == "util-model"]
    largest = max(sum(count_tokens(m["content"]) + 4 for m in r.messages) for r in agent_calls)
    util_tokens = sum(sum(count_tokens(m["content"]) for m in r.messages) for r in util_calls)
    return [
        Row(f"{turns}-turn chat: largest prompt (window {WINDOW:,})", largest, "tokens", WINDOW),
        Row(f"{turns}-turn chat: utility (summary) calls", len(util_calls), "calls"),
        Row(f"{turns}-turn chat: tokens sent to the utility model", util_tokens, "tokens"),
        Row(f"{turns}-turn chat: time compressing (background)", spent["compressing"], "s"),
        Row(f"{turns}-turn chat: model calls held up by compression", spent["blocked"], "s"),
        Row(f"{turns}-turn chat: wall time ({2 * turns} model calls)", wall, "s"),
    ]
