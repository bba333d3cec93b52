"""The server process: start-up until `/health` answers, and its resident memory.

Runs real `run_ui.py` processes. With a provider configured (the fake model
server), and out of the box, where the embedded model loads in the background
after `/health` already answers. Memory is read from /proc of the server's processes
(gunicorn's arbiter and its worker, each shared page once: their PSS added up): idle,
and after 50 saved chats of 200 messages were opened through the API (which reads
each whole into memory).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.harness import Row, provider_env
from bench.persistence import make_chat
from store import persist_chat
from tests.support.fake_llm import start_fake_llm
from tests.support.server_process import ServerProcess

API_KEY = "bench-key"


def memory_mb(server: ServerProcess) -> float:
    """The server's memory: its processes' resident sets, each page shared between them
    counted once (their PSS, added up). Under gunicorn the arbiter and its worker share
    the pages of start-up's imports; with one process this is its RSS less the share of
    pages it has in common with other programs."""
    total = 0
    for pid in server.pids():
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return total / 1024


def get(server: ServerProcess, path: str) -> dict:  # type: ignore[type-arg]
    request = urllib.request.Request(server.url + path, headers={"X-API-Key": API_KEY})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def started(env: dict[str, str], ready: list[float] | None = None) -> tuple[ServerProcess, float]:
    """A running server, once `/health` says ready, and the seconds from launch until it
    first answered (noted in `ready`: until it said ready, start-up's imports done)."""
    log_file = Path(tempfile.mkstemp(prefix="cadre-bench-server-", suffix=".log")[1])
    began = time.perf_counter()
    server = ServerProcess(env, log_file).start()
    answered = time.perf_counter() - began
    # Every benchmark measures once start-up's imports are done: litellm's (seconds) shares
    # the interpreter with whatever the server does meanwhile.
    while not get(server, "/health")["ready"]:
        time.sleep(0.01)
    if ready is not None:
        ready.append(time.perf_counter() - began)
    return server, answered


def settle(seconds: float = 1.0) -> None:
    """Let start-up threads (the knowledge index, the token encoding) finish."""
    time.sleep(seconds)


def run(quick: bool) -> list[Row]:
    llm = start_fake_llm()
    usr = Path(os.environ["CADRE_USR_DIR"])
    env = {**os.environ, **provider_env(llm.base_url), "CADRE_API_KEY": API_KEY}
    rows: list[Row] = []
    try:
        times: list[float] = []
        ready: list[float] = []
        for _ in range(3 if quick else 5):
            server, seconds = started(env, ready)
            times.append(seconds)
            settle()
            idle = memory_mb(server)
            server.stop()
        rows.append(Row("start-up: `run_ui.py` launched until `/health` answers (a provider"
                        " set), median", statistics.median(times), "s", 1.0))  # fmt: skip
        rows.append(Row("start-up: the same until `/health` says ready (the model client"
                        " imported), median", statistics.median(ready), "s"))  # fmt: skip

        # Out of the box: no provider, so the embedded model loads after start-up.
        box_env = {k: v for k, v in env.items() if not k.startswith(("CADRE_CHAT_", "CADRE_UTIL_"))}
        server, box_start = started(box_env)
        try:
            deadline = time.monotonic() + 120
            while get(server, "/api/setup")["local"]["state"] == "loading":
                if time.monotonic() > deadline:
                    raise RuntimeError("the embedded model did not load in 120 s")
                time.sleep(0.2)
            state = get(server, "/api/setup")["local"]["state"]
            box_rss = memory_mb(server)
        finally:
            server.stop()

        for n in range(50):
            persist_chat.write_chat(make_chat(f"m{n:02d}", 200))
        server, _ = started(env)
        try:
            settle()
            listed = memory_mb(server)
            for n in range(50):
                get(server, f"/api/v1/chats/m{n:02d}")
            loaded = memory_mb(server)
        finally:
            server.stop()
    finally:
        llm.stop()
    rows += [
        Row("start-up out of the box (embedded model loads after)", box_start, "s", 1.0),
        Row("memory: resident (PSS, every process), idle (a provider set)", idle, "MB"),
        Row(f"memory: resident (PSS), out of the box, embedded model {state}", box_rss, "MB"),
        Row("memory: resident (PSS), 50 saved chats listed, none opened", listed, "MB"),
        Row("memory: resident (PSS), 50 chats of 200 messages opened", loaded, "MB"),
    ]
    assert usr.exists()
    return rows
