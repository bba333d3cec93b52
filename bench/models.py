"""The model clients: what each costs per call and per chunk, and how many chats overlap.

Against the same fake server in this process: a 100-chunk streamed reply and a tiny
reply through the litellm client, the lean OpenAI-SDK client (both through the model
seam, `models.model.for_config`, our reading included) and a plain SSE reader (httpx,
each event's JSON parsed for its text: the least any client must do). Then 50 chats at
once, 20 ms a chunk, through the whole agent loop with each client, against a fake
server in a process of its own (as a provider is): the overlap factor is 50 x one chat's
time / the wall time of all 50 (50 would be perfect). The 50 messages are sent at once,
each from a thread of its own, as people's messages reach the server.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from bench.harness import Row
from bench.runtime import point_at
from tests.support.fake_llm import Reply, start_fake_llm

CLIENTS = ("litellm", "openai")
#: Chunks of the long streamed reply.
CHUNKS = 100
#: Rounds of 50 chats at once; their median overlap is the figure.
ROUNDS = 5
USER = [{"role": "user", "content": "hi"}]


def client_times(llm: Any, repeat: int) -> dict[str, tuple[float, float]]:
    """Per reader: median ms of a CHUNKS-chunk streamed reply, and of a tiny reply."""
    import httpx

    from models.llm import ModelConfig
    from models.model import for_config

    pieces = [f"w{i} " for i in range(CHUNKS)]

    async def seam(client: str, reply: Reply) -> float:
        model = for_config(ModelConfig("openai/m", llm.base_url, "k", retries=0, client=client))
        llm.script(reply)
        began = time.perf_counter()
        await model.complete(USER)
        return time.perf_counter() - began

    async def plain(http: httpx.AsyncClient, reply: Reply) -> float:
        llm.script(reply)
        body = {"model": "m", "messages": USER, "stream": True}
        began = time.perf_counter()
        text = []
        async with http.stream("POST", f"{llm.base_url}/chat/completions", json=body) as answer:
            async for line in answer.aiter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    break
                choices = json.loads(line[6:])["choices"]
                if choices:
                    text.append(choices[0]["delta"].get("content") or "")
        return time.perf_counter() - began

    async def measure() -> dict[str, tuple[float, float]]:
        found: dict[str, tuple[float, float]] = {}
        for client in CLIENTS:
            await seam(client, Reply("warm"))  # the SDK's import, a connection
            long = [await seam(client, Reply(pieces)) for _ in range(repeat)]
            tiny = [await seam(client, Reply("ok")) for _ in range(repeat)]
            found[client] = (statistics.median(long), statistics.median(tiny))
        async with httpx.AsyncClient() as http:
            await plain(http, Reply("warm"))
            long = [await plain(http, Reply(pieces)) for _ in range(repeat)]
            tiny = [await plain(http, Reply("ok")) for _ in range(repeat)]
            found["plain"] = (statistics.median(long), statistics.median(tiny))
        return {name: (a * 1000, b * 1000) for name, (a, b) in found.items()}

    return asyncio.run(measure())


#: A fake server in a process of its own that answers every chat call with PIECES, 20 ms
#: apart: in this process its 50 sending threads would take the GIL from the chats.
SERVE = """
import sys
from tests.support.agents import answer
from tests.support.fake_llm import Reply, start_fake_llm
text = answer("one two three four five six seven eight")
server = start_fake_llm()
server.add_rule(lambda body: True, Reply([text[i : i + 12] for i in range(0, len(text), 12)],
                                         delay=0.02))
print(server.base_url, flush=True)
sys.stdin.read()  # until the benchmark closes it
server.stop()
"""


@contextmanager
def paced_server() -> Iterator[str]:
    """The base URL of a fake server in its own process, answering as SERVE says."""
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url:
            raise RuntimeError("the fake server's process did not start (see above)")
        yield base_url
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(30)


def overlap(runtime: Any, base_url: str, client: str, one_thread: bool = False) -> float:
    """50 x one chat's time / the wall time of 50 chats at once (20 ms a chunk), the median
    of `ROUNDS` rounds.

    "At once": each chat's message is sent from a thread of its own, all released
    together, as 50 people's messages reach the server, each in its handler's thread.
    `one_thread` sends them one after another from one thread instead, each waiting
    until the agents' loop took it (as this figure was measured before): the 50th
    chat then starts only after 49 turns of a busy loop."""
    from core.agent_types import UserMessage
    from core.chat import Chat
    from helpers import heap
    from initialize import agent_config

    def chat() -> Chat:
        config = agent_config({"model_client": client, "chat_api_base": base_url})
        assert config.model_for(config.chat_model).name == client
        return Chat(config, runtime)

    chat().communicate(UserMessage("warm")).result(30)
    heap.settle()  # as run_ui.py does once start-up's imports are done
    began = time.perf_counter()
    chat().communicate(UserMessage("alone")).result(30)
    single = time.perf_counter() - began
    factors = []
    for _ in range(ROUNDS):  # one round swings by a third on a shared machine: the median
        contexts = [chat() for _ in range(50)]
        if one_thread:
            began = time.perf_counter()
            handles = [c.communicate(UserMessage(f"chat {n}")) for n, c in enumerate(contexts)]
        else:
            began, handles = send_at_once(contexts)
        for handle in handles:
            handle.result(120)
        factors.append(50 * single / (time.perf_counter() - began))
    return statistics.median(factors)


def send_at_once(contexts: list[Any]) -> tuple[float, list[Any]]:
    """A message to each chat from a thread of its own, all released by one barrier; when
    they were released, and the runs' handles."""
    from core.agent_types import UserMessage

    released: list[float] = []
    barrier = threading.Barrier(len(contexts), action=lambda: released.append(time.perf_counter()))

    def send(number: int, context: Any) -> Any:
        barrier.wait()
        return context.communicate(UserMessage(f"chat {number}"))

    with ThreadPoolExecutor(len(contexts)) as pool:
        handles = list(pool.map(send, range(len(contexts)), contexts))
    return released[0], handles


def run(quick: bool) -> list[Row]:
    from helpers.runtime import AgentRuntime

    llm = start_fake_llm()
    point_at(llm)
    runtime = AgentRuntime().start()
    try:
        times = client_times(llm, 5 if quick else 20)
        with paced_server() as base_url:
            overlaps = {client: overlap(runtime, base_url, client) for client in CLIENTS}
            one_thread = overlap(runtime, base_url, "openai", one_thread=True)
    finally:
        runtime.stop()
        llm.stop()
    plain_long, plain_tiny = times["plain"]
    names = {"litellm": "litellm client", "openai": "lean client (openai SDK)"}
    rows = []
    for client in CLIENTS:
        long, tiny = times[client]
        lean = client == "openai"
        rows += [
            Row(f"{CHUNKS}-chunk streamed reply through the {names[client]}", long, "ms"),
            Row(f"the same: {names[client]} / plain SSE reader", long / plain_long, "x",
                2.0 if lean else None),
            Row(f"tiny reply through the {names[client]}", tiny, "ms"),
        ]  # fmt: skip
    rows += [
        Row(f"{CHUNKS}-chunk streamed reply read by a plain httpx SSE reader", plain_long, "ms"),
        Row("tiny reply read by a plain httpx SSE reader", plain_tiny, "ms"),
    ]
    rows += [
        Row(f"50 chats at once, 20 ms a chunk, {names[client]}: overlap factor", overlaps[client],
            "x", 25.0 if client == "openai" else None, higher_is_better=True)
        for client in CLIENTS
    ]  # fmt: skip
    rows.append(
        Row("the same, lean client, the 50 sent one after another from one thread", one_thread,
            "x", higher_is_better=True)
    )  # fmt: skip
    return rows
