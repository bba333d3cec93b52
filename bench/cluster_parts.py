"""The parts bench/cluster.py measures with: a real redis-server, real run_ui.py nodes on
one shared usr/ folder, a run_ui.py alone, and what is read of them (their API, their
memory, Redis's own counters).

Every process is started with the environment of bench/steps.py (the fake model server
of this process, the `echoer` profile, the API key), so a step costs the same work in
each; a node adds `CADRE_REDIS_URL`, `CADRE_NODE_ID` and, when given, `CADRE_NODE_TTL`.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench.steps import API_KEY, server_env
from tests.support.fake_llm import FakeLLMServer
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess

NAMES = ("node-a", "node-b", "node-c")
#: Seconds run_ui.py may take to say ready: four start at once on a busy 2-core machine.
START_TIMEOUT = 180.0


@dataclass
class Parts:
    """What one run of the benchmark started; `stop` ends all of it."""

    llm: FakeLLMServer
    redis: RedisServer
    usr: Path
    logs: Path
    ttl: float | None
    nodes: dict[str, ServerProcess] = field(default_factory=dict)
    alone: ServerProcess | None = None
    #: The nodes killed, and when (Unix time).
    kills: list[tuple[str, float]] = field(default_factory=list)

    def node(self, name: str) -> ServerProcess:
        """A node of the cluster on the shared usr/ folder (not started)."""
        env = {**server_env(self.llm), "CADRE_USR_DIR": str(self.usr),
               "CADRE_REDIS_URL": self.redis.url, "CADRE_NODE_ID": name,
               # Stopped at the end: its grace need not be long.
               "CADRE_DRAIN_GRACE": "1"}  # fmt: skip
        if self.ttl is not None:
            env["CADRE_NODE_TTL"] = f"{self.ttl:g}"
        server = ServerProcess(env, self.logs / f"{name}.log")
        self.nodes[name] = server
        return server

    def live(self) -> dict[str, ServerProcess]:
        return {name: s for name, s in self.nodes.items() if alive(s)}

    def stop(self) -> None:
        servers = [*self.nodes.values(), *([self.alone] if self.alone else [])]
        together([s.stop for s in servers])
        self.redis.close()
        self.llm.stop()


def alive(server: ServerProcess) -> bool:
    return server.process is not None and server.process.poll() is None


def together(calls: Iterable[Callable[[], object]]) -> None:
    """Run `calls` on threads of their own, at once; the first failure is raised."""
    failures: list[BaseException] = []

    def call(fn: Callable[[], object]) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - raised by the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=call, args=(fn,)) for fn in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def start_all(servers: Iterable[ServerProcess]) -> None:
    """Start them at once; return when every one says ready (its imports done)."""
    together([partial(s.start, START_TIMEOUT, ready=True) for s in servers])


# -- the API -------------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status = status


def api(server: ServerProcess, method: str, path: str, body: dict[str, Any] | None = None,
        timeout: float = 120) -> dict[str, Any]:  # fmt: skip
    """One call of the server's API with the benchmark's key; ApiError for an HTTP error."""
    request = urllib.request.Request(
        server.url + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"X-API-Key": API_KEY, "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            found: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ApiError(exc.code, exc.read().decode(errors="replace")) from None
    return found


def taken(server: ServerProcess) -> dict[str, int]:
    """Runs each node took from the run queue so far (`GET /api/cluster`'s `taken`)."""
    return {row["node"]: int(row["taken"]) for row in api(server, "GET", "/api/cluster")["nodes"]}


def taken_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after.get(name, 0) - before.get(name, 0) for name in sorted(after)}


# -- memory --------------------------------------------------------------------------------


def memory_mb(pid: int, field: str) -> float:
    """A process's `field` of /proc (`VmRSS` of status, `Pss` of smaps_rollup), in MB; 0
    when it has ended."""
    source = "status" if field.startswith("Vm") else "smaps_rollup"
    try:
        for line in Path(f"/proc/{pid}/{source}").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def worker_rss(server: ServerProcess) -> float:
    """The RSS of the process that serves and runs the agents (gunicorn's worker: the
    largest of the server's processes), in MB."""
    return max(memory_mb(pid, "VmRSS") for pid in server.pids())


def server_pss(server: ServerProcess) -> float:
    """The memory of all the server's processes (gunicorn's arbiter and its worker), each
    page shared between them counted once (PSS), in MB."""
    return sum(memory_mb(pid, "Pss") for pid in server.pids())


class PeakMemory:
    """The largest worker RSS and server PSS of each server seen while the block runs
    (sampled 4 times a second on a thread of its own)."""

    def __init__(self, servers: dict[str, ServerProcess]) -> None:
        self.servers = servers
        self.rss: dict[str, float] = dict.fromkeys(servers, 0.0)
        self.pss: dict[str, float] = dict.fromkeys(servers, 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            for name, server in self.servers.items():
                if alive(server):
                    self.rss[name] = max(self.rss[name], worker_rss(server))
                    self.pss[name] = max(self.pss[name], server_pss(server))
            if self._stop.wait(0.25):
                return


# -- the nodes' logs ----------------------------------------------------------------------

_TAKES = re.compile(r"^(\S+ \S+) WARNING cluster\.redis_runs: node (\S+) takes over chat (\w+)"
                    r" from node (\S+)$", re.MULTILINE)  # fmt: skip
_GOES_ON = re.compile(r"took over chat (\w+) of node \S+ in \d+ ms: it goes on here")


def late_leases(logs: Path, kills: list[tuple[str, float]], ttl: float) -> tuple[int, int]:
    """How many chats were taken over from a node that was alive (its lease expired: its
    heartbeat came later than the TTL), by the nodes' logs; and how many of those went on
    running on the node that took them (a chat saved running: run a second time)."""
    late, again = 0, 0
    for log in logs.glob("node-*.log"):
        text = log.read_text(errors="replace")
        going = set(_GOES_ON.findall(text))
        for stamp, _taker, chat, former in _TAKES.findall(text):
            if former.startswith("handover:"):
                continue  # a node that stopped handed it over: no failure
            when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")  # the nodes' local time
            # A killed node's leases expire within a TTL and a heartbeat of its death.
            dead = any(node == former and at <= when.timestamp() <= at + 2 * ttl + 5
                       for node, at in kills)  # fmt: skip
            if not dead:
                late += 1
                again += chat in going
    return late, again


# -- Redis's own counters -----------------------------------------------------------------


@dataclass(frozen=True)
class RedisCount:
    """Commands Redis ran (by name) and bytes it read and wrote, since it started."""

    calls: dict[str, int]
    read: int
    written: int
    at: float

    @classmethod
    def now(cls, redis: RedisServer) -> RedisCount:
        client = redis.client()
        try:
            stats = client.info("commandstats")
            net = client.info("stats")
        finally:
            client.close()
        calls = {name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()}
        return cls(calls, int(net["total_net_input_bytes"]), int(net["total_net_output_bytes"]),
                   time.monotonic())  # fmt: skip

    def since(self, before: RedisCount) -> RedisCount:
        """What happened between `before` and this count (our own INFO calls left out)."""
        calls = {name: n - before.calls.get(name, 0) for name, n in self.calls.items()}
        calls = {name: n for name, n in calls.items() if n and name != "info"}
        return RedisCount(calls, self.read - before.read, self.written - before.written,
                          self.at - before.at)  # fmt: skip

    @property
    def total(self) -> int:
        return sum(self.calls.values())
