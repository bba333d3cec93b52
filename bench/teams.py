"""Parallel subordinates against sequential ones: the wall time of N delegations.

Agent 0 hands out N tasks, either all at once (`call_subordinates`, the
siblings run at the same time) or one after another (`call_subordinate` N
times). Every subordinate streams its answer from the fake model server in
small chunks 20 ms apart (about half a second each), so the work is waiting
on the model, as with a real provider. Speed-up = sequential time / parallel
time; the target is at least 0.8 × N up to N = 4 (past the default
`max_parallel_subordinates`, N = 8 is shown without one). In process: one
agents' runtime, the real litellm client, real chat files.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.harness import Row, provider_env
from tests.support.agents import answer, reply
from tests.support.fake_llm import FakeLLMServer, Reply, model_is, start_fake_llm

#: Seconds between two chunks of a subordinate's streamed answer.
CHUNK_DELAY = 0.02
#: Characters of each chunk.
CHUNK = 8


def routed_to(task: str) -> Any:
    """Requests of the subordinate working on `task` (its first user message)."""

    def predicate(body: dict[str, Any]) -> bool:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        return bool(users) and task in str(users[0].get("content"))

    return predicate


def script_subordinates(llm: FakeLLMServer, tasks: list[str], chunks: int) -> None:
    text = "x" * max(1, chunks * CHUNK - len(answer("")))
    for task in tasks:
        llm.add_rule(routed_to(task), Reply(answer(text), chunk_size=CHUNK, delay=CHUNK_DELAY))


def one_run(runtime: Any, llm: FakeLLMServer, n: int, parallel: bool, chunks: int) -> float:
    """Seconds from the message to Agent 0's answer."""
    from core.agent_types import UserMessage
    from core.chat import Chat
    from initialize import agent_config

    llm.reset()
    llm.add_rule(model_is("u"), Reply("A name"))  # the utility model (the chat's name)
    tasks = [f"Task number {k} of {n}: report." for k in range(1, n + 1)]
    script_subordinates(llm, tasks, chunks)
    if parallel:
        llm.script(Reply(reply("call_subordinates", tasks=[{"message": t} for t in tasks])))
    else:
        llm.script(*(Reply(reply("call_subordinate", message=t, reset=True)) for t in tasks))
    llm.script(Reply(answer("All reported.")))
    context = Chat(agent_config({"max_parallel_subordinates": max(n, 4)}), runtime)
    began = time.perf_counter()
    context.communicate(UserMessage("Report on every task.")).result(120)
    return time.perf_counter() - began


def run(quick: bool) -> list[Row]:
    from helpers.runtime import AgentRuntime

    llm = start_fake_llm()
    os.environ.update(provider_env(llm.base_url))
    os.environ["CADRE_MEMORY_RECALL_TOKENS"] = "0"
    runtime = AgentRuntime().start()
    chunks = 10 if quick else 25
    rows = []
    try:
        one_run(runtime, llm, 2, True, 2)  # warm up: imports, the first connection
        for n in (2, 4, 8):
            sequential = one_run(runtime, llm, n, False, chunks)
            parallel = one_run(runtime, llm, n, True, chunks)
            rows.append(
                Row(
                    f"teams: {n} parallel subordinates, speed-up over sequential",
                    sequential / parallel,
                    "x",
                    target=0.8 * n if n <= 4 else None,
                    higher_is_better=True,
                    note=f"{sequential:.2f} s sequential, {parallel:.2f} s parallel; "
                    f"{chunks} chunks of {CHUNK_DELAY * 1000:.0f} ms each",
                )
            )
    finally:
        runtime.stop()
        llm.stop()
    return rows
