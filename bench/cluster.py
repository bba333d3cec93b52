"""Cluster mode (issue 36), measured with real parts: a real `redis-server`, three real
`run_ui.py` nodes on it and on one shared usr/ folder, a `run_ui.py` alone (no Redis), and
the fake model server in this process (bench/cluster_parts.py starts them).

- **The step with Redis against the process alone.** The message of bench/steps.py
  (`STEPS` echo steps and the answer, `"wait": true`) sent to the process alone and to
  node-a of the three, in rounds that take turns; seconds per step with the fake server's
  own time taken out, each side's median, and the median of the rounds' differences (the
  issue's target: 2 ms more at most). On node-a a new chat's run goes through the run
  queue: the node that takes it may be another, and node-a hands the request over. What
  Redis ran meanwhile is counted (`INFO commandstats`): the pusher's emits (every chat's
  news goes through Redis in a cluster), the lease, the queue.
- **Redis's traffic per streamed chunk.** With a page connected to each node (so each
  node listens to the message queue, as in use), an answer streamed in many chunks 20 ms
  apart (a model's pace) against the same answer in one chunk: the commands and bytes
  the difference cost, per chunk, the idle nodes' own traffic taken out.
- **200 chats over three nodes against one node.** 200 messages to new chats (`"wait":
  false`), sent round-robin to the three nodes (four client threads), each answered in one
  step; seconds until the last answer (its log item's time stamp), then each chat checked
  on another node (`GET /api/v1/chats/<id>`): its message and its own answer, each exactly
  once. Then the same on one node left alone in its cluster (the others stopped) and on
  the process alone. The spread is `GET /api/cluster`'s `taken`. On a 2-core machine three
  nodes are no faster than one: the point is that nothing is lost and the spread is even.
- **Takeover after SIGKILL** (bench/cluster_takeover.py). The default TTL (10 s: the
  target is 15 s) in the full run, 2 s in `--quick`.

The nodes' memory (the worker's RSS, and the node's processes' PSS) is read once they are
ready, and sampled during the 200 chats.

Why one module past 400 lines: the three measures share the nodes, the rounds and the
rows' notes of one run; the parts that stand alone (starting the parts, the takeovers)
are modules of their own already.
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import Any

from bench.cluster_parts import (
    NAMES,
    ApiError,
    Parts,
    PeakMemory,
    RedisCount,
    api,
    server_pss,
    start_all,
    taken,
    taken_since,
    together,
    worker_rss,
)
from bench.cluster_takeover import late_row, takeover_rows
from bench.harness import Row
from bench.steps import STEPS, handler_clock, one_message, prepare, server_env
from tests.support.agents import answer
from tests.support.fake_llm import Reply, last_user_contains
from tests.support.live_web import as_host, close_socket, open_socket
from tests.support.redis_server import RedisServer
from tests.support.server_process import ServerProcess

#: Seconds a node's heartbeat and leases live in `--quick` (the full run keeps the default).
QUICK_TTL = 2.0
#: The issue's target: milliseconds more per step with Redis.
STEP_TARGET_MS = 2.0
SENDERS = 4


def run(quick: bool) -> list[Row]:
    usr = Path(os.environ["CADRE_USR_DIR"])
    logs = Path(tempfile.mkdtemp(prefix="cadre-bench-cluster-"))
    parts = Parts(prepare(usr), RedisServer(logs / "redis").start(), usr, logs,
                  QUICK_TTL if quick else None)  # fmt: skip
    alone_usr = usr.with_name("usr-alone")
    prepare(alone_usr).stop()  # its profile alone: the one fake server serves both
    parts.alone = alone = ServerProcess({**server_env(parts.llm), "CADRE_USR_DIR": str(alone_usr)},
                                        logs / "alone.log")  # fmt: skip
    numbers = count()
    chats = 30 if quick else 200
    try:
        began = time.perf_counter()
        start_all([alone, *(parts.node(name) for name in NAMES)])
        started = time.perf_counter() - began
        memory = {name: (worker_rss(s), server_pss(s))
                  for name, s in {**parts.nodes, "alone": alone}.items()}  # fmt: skip
        rows = step_rows(parts, quick, numbers)
        rows[0].note += f" Four processes started at once, ready in {started:.0f} s."
        rows += traffic_rows(parts, quick)
        spreads = {"3 nodes": spread(parts, list(parts.nodes.values()), chats, numbers)}
        taking_over = takeover_rows(parts)
        # One node left in its cluster: the others stopped (told to: they leave at once).
        last, *others = parts.live().values()
        for server in others:
            server.stop()
        spreads["1 node"] = spread(parts, [last], chats, numbers)
        spreads["alone"] = spread(parts, [alone], chats, numbers, clustered=False)
        rows += spread_rows(spreads, chats, memory)
        rows += taking_over
    except BaseException:
        parts.stop()
        print(f"(the processes' logs are in {logs})")
        raise
    parts.stop()
    rows.append(late_row(parts))
    shutil.rmtree(logs, ignore_errors=True)
    return rows


# -- the step ------------------------------------------------------------------------------


def step_rows(parts: Parts, quick: bool, numbers: Iterator[int]) -> list[Row]:
    assert parts.alone is not None
    alone, node, llm = parts.alone, parts.nodes["node-a"], parts.llm
    rounds = 6 if quick else 30
    walls: dict[str, list[float]] = {"alone": [], "cluster": []}
    cpus: dict[str, list[float]] = {"alone": [], "cluster": []}
    ran_on: list[str] = []
    publishes: list[float] = []
    commands: list[RedisCount] = []
    with handler_clock() as spent:
        one_message(alone.url, llm, spent, -1 - next(numbers))  # warm: tools loaded, ...
        warm_every_node(parts, lambda: one_message(node.url, llm, spent, -1 - next(numbers)))
        for turn in range(rounds):
            for side in ("alone", "cluster") if turn % 2 == 0 else ("cluster", "alone"):
                if side == "alone":
                    wall, cpu = one_message(alone.url, llm, spent, next(numbers), alone.pids())
                else:
                    before, counted = taken(node), RedisCount.now(parts.redis)
                    pids = [pid for s in parts.nodes.values() for pid in s.pids()]
                    wall, cpu = one_message(node.url, llm, spent, next(numbers), pids)
                    redis = RedisCount.now(parts.redis).since(counted)
                    ran = [n for n, runs in taken_since(before, taken(node)).items() if runs]
                    ran_on.append(ran[0] if ran else "?")
                    publishes.append(redis.calls.get("publish", 0) / (STEPS + 1))
                    commands.append(redis)
                walls[side].append(wall * 1000)
                cpus[side].append(cpu * 1000)
    local = [w for w, n in zip(walls["cluster"], ran_on, strict=True) if n == "node-a"]
    handed = [w for w, n in zip(walls["cluster"], ran_on, strict=True) if n != "node-a"]
    extra = [c - a for c, a in zip(walls["cluster"], walls["alone"], strict=True)]
    extra_cpu = [c - a for c, a in zip(cpus["cluster"], cpus["alone"], strict=True)]
    split = (
        f"run on node-a itself {len(local)} times (median {_median(local):.1f} ms),"
        f" handed to another node {len(handed)} times ({_median(handed):.1f} ms)"
    )
    return [
        Row("cluster: step, run_ui.py alone", statistics.median(walls["alone"]), "ms",
            note=f"per step of bench/steps.py's message ({STEPS} echo steps + answer, wait:"
                 " true), the fake server's own time taken out; medians of"
                 f" {rounds} rounds taking turns with node-a; no page connected anywhere."),
        Row("cluster: step, node-a of 3 nodes on Redis", statistics.median(walls["cluster"]),
            "ms", note=f"the run queue gives each new chat's run to a node: {split}."
                 f" Redis ran {statistics.median(c.total for c in commands):.0f} commands per"
                 f" message (median): {statistics.median(publishes):.2f} PUBLISH per step (the"
                 " pusher sends every chat's news through Redis in a cluster, watched or"
                 f" not), and per message {by_command(commands)}."),
        Row("cluster: step, extra with Redis (median of the rounds' differences)",
            round(statistics.median(extra), 3), "ms", STEP_TARGET_MS,
            note=f"the differences' quartiles: {quartiles(extra)} ms: other work on this"
                 " shared machine moves a message's steps by several ms either way; the"
                 " servers' CPU below varies less."),
        Row("cluster: step, server CPU, run_ui.py alone", statistics.median(cpus["alone"]), "ms"),
        Row("cluster: step, server CPU, the 3 nodes together (idle ones included)",
            statistics.median(cpus["cluster"]), "ms"),
        Row("cluster: step, extra server CPU with Redis (median of the rounds' differences)",
            round(statistics.median(extra_cpu), 3), "ms", STEP_TARGET_MS,
            note=f"quartiles {quartiles(extra_cpu)} ms; CPU read in clock ticks (10 ms) per"
                 f" message of {STEPS + 1} steps, as bench/steps.py."),
    ]  # fmt: skip


def by_command(counts: list[RedisCount]) -> str:
    """The median calls of each command but PUBLISH over `counts`, largest first: the run
    queue, the lease, the hand-over's checks, and the heartbeats meanwhile."""
    names = {name for c in counts for name in c.calls} - {"publish"}
    medians = {name: statistics.median(c.calls.get(name, 0) for c in counts) for name in names}
    shown = sorted(((n, m) for n, m in medians.items() if m), key=lambda nm: (-nm[1], nm[0]))
    return ", ".join(f"{name} {m:g}" for name, m in shown)


def warm_every_node(parts: Parts, send: Callable[[], object]) -> None:
    """Messages to node-a until every node has run one (the queue spreads them): each
    node's first run (its tools loaded, its prompts read) paid before any is measured."""
    node = parts.nodes["node-a"]
    before = taken(node)
    for _ in range(5 * len(parts.nodes)):
        send()
        if all(taken_since(before, taken(node)).get(name, 0) for name in parts.nodes):
            return
    raise RuntimeError(f"the run queue never gave node-b or node-c a run: {taken(node)}")


def quartiles(values: list[float]) -> str:
    first, _, third = statistics.quantiles(values, n=4)
    return f"{first:.2f} to {third:.2f}"


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- Redis's traffic per chunk -------------------------------------------------------------


#: What a chunk's cost is counted in: commands, of them PUBLISH, bytes in, bytes out.
MEASURES: tuple[Callable[[RedisCount], float], ...] = (
    lambda c: c.total, lambda c: c.calls.get("publish", 0), lambda c: c.read, lambda c: c.written,
)  # fmt: skip
#: Chunks of each streamed answer (20 ms apart, a model's pace): the longer answer comes in
#: larger chunks, so both take as long.
CHUNKS = 110


def traffic_rows(parts: Parts, quick: bool) -> list[Row]:
    """Commands and bytes per streamed chunk (see the module's docstring), for an answer of
    about 1,000 and one of about 4,000 characters: a log item changed is sent whole, so a
    chunk costs more bytes the longer its item has grown."""
    sentence = "The answer, streamed as a model streams it. "
    texts = {"short": sentence * 22, "long": sentence * 88}
    pages = [open_socket(s, as_host(s, "127.0.0.1")) for s in parts.nodes.values()]
    try:
        idle_before = RedisCount.now(parts.redis)
        time.sleep(1.5 if quick else 4.0)
        idle = RedisCount.now(parts.redis).since(idle_before)
        found: dict[str, list[list[float]]] = {name: [] for name in texts}
        for n in range(1 if quick else 4):
            for name, text in texts.items():
                found[name].append(chunk_cost(parts, text, idle, f"stream {n} {name}"))
    finally:
        logging.getLogger("engineio.client").setLevel(logging.CRITICAL)  # "aborting": we do
        for page in pages:
            close_socket(page)
    short, long = ([statistics.median(x) for x in zip(*found[name], strict=True)]
                   for name in texts)  # fmt: skip
    sizes = {name: len(answer(text)) for name, text in texts.items()}
    note = (f"{len(found['short'])} pair(s), medians: an answer ({sizes['short']:,} characters"
            f" of JSON) streamed in {CHUNKS} chunks 20 ms apart against the same in one chunk,"
            f" with a page connected to each of the 3 nodes (each node then listens to every"
            f" publish); {short[1]:.2f} of the commands are PUBLISH; the idle nodes' own"
            f" traffic taken out: {idle.total / idle.at:.1f} commands/s for the 3"
            f" ({', '.join(f'{k} {v}' for k, v in sorted(idle.calls.items()))} in"
            f" {idle.at:.0f} s)")  # fmt: skip
    return [
        Row("cluster: Redis commands per streamed chunk", short[0], "commands", note=note),
        Row(f"cluster: Redis bytes in per chunk, a {sizes['short']:,}-character answer",
            short[2], "B"),
        Row("cluster: Redis bytes out per chunk (3 nodes listening), the same", short[3], "B"),
        Row(f"cluster: Redis bytes in per chunk, a {sizes['long']:,}-character answer",
            long[2], "B", note=f"the same in {CHUNKS} larger chunks: {long[0]:.2f} commands"
                               f" per chunk, {long[3]:,.0f} B out. A chunk sends its log"
                               " item again whole: its bytes grow with the answer so far."),
    ]  # fmt: skip


def chunk_cost(parts: Parts, text: str, idle: RedisCount, message: str) -> list[float]:
    """`MEASURES` per chunk of `text` streamed in `CHUNKS` chunks, less the same in one."""
    whole = answer(text)
    streaming = Reply(whole, chunk_size=-(-len(whole) // CHUNKS), delay=0.02)
    chunks = len(streaming.content_pieces())
    counted = []
    for reply in (streaming, Reply(whole, chunk_size=len(whole))):
        parts.llm.script(reply)
        before = RedisCount.now(parts.redis)
        sent = api(parts.nodes["node-a"], "POST", "/api/v1/message",
                   {"message": message, "wait": True})  # fmt: skip
        if sent.get("response") != text:
            raise RuntimeError(f"unexpected answer: {sent}")
        counted.append(RedisCount.now(parts.redis).since(before))
    streamed, alone = counted
    return [(busy(streamed, of, idle) - busy(alone, of, idle)) / (chunks - 1) for of in MEASURES]


def busy(counted: RedisCount, of: Callable[[RedisCount], float], idle: RedisCount) -> float:
    """`of(counted)` less what the idle nodes do by themselves in as long (heartbeats, the
    queue's blocking reads)."""
    return of(counted) - of(idle) / idle.at * counted.at


# -- 200 chats -----------------------------------------------------------------------------


def spread_rows(found: dict[str, dict[str, Any]], chats: int,
                memory: dict[str, tuple[float, float]]) -> list[Row]:  # fmt: skip
    rows = []
    for label, words in (("3 nodes", "sent round-robin to 3 nodes"),
                         ("1 node", "sent to the one node of a cluster"),
                         ("alone", "sent to run_ui.py alone (no Redis)")):  # fmt: skip
        result = found[label]
        what = f"{chats} new chats ({SENDERS} senders, wait: false) until the last answer"
        rows.append(Row(f"cluster: {what}, {words}", result["wall"], "s", note=result["note"]))
    lost = sum(result["wrong"] for result in found.values())
    rows.append(Row(f"cluster: chats lost, doubled or mixed up of 3 x {chats}", lost, "chats",
                    0, note="on a 2-core machine three nodes are no faster than one: the"
                            " point is that nothing is lost and the spread is even."))  # fmt: skip
    rss, pss = ([memory[name][i] for name in NAMES] for i in (0, 1))
    rows.append(Row("cluster: a node's memory once ready (worker RSS, median of 3)",
                    statistics.median(rss), "MB",
                    note=f"a node's processes together (gunicorn's arbiter and its worker,"
                         f" PSS: shared pages split between them): {statistics.median(pss):.0f}"
                         f" MB; run_ui.py alone: {memory['alone'][0]:.0f} MB worker RSS,"
                         f" {memory['alone'][1]:.0f} MB PSS."))  # fmt: skip
    three = found["3 nodes"]["memory"]
    rows.append(Row(f"cluster: a node's memory under the {chats} chats (largest worker RSS)",
                    max(three.rss.values()), "MB",
                    note="peak worker RSS / PSS of the node's processes: "
                         + "; ".join(f"{peaks(found[label]['memory'])} {words}"
                                     for label, words in (("3 nodes", "with 3 nodes"),
                                                          ("1 node", "with 1 node"),
                                                          ("alone", "alone"))) + "."))  # fmt: skip
    return rows


def peaks(memory: PeakMemory) -> str:
    rss = "/".join(f"{v:.0f}" for v in memory.rss.values())
    return f"{rss} / {'/'.join(f'{v:.0f}' for v in memory.pss.values())} MB"


def spread(parts: Parts, targets: list[ServerProcess], chats: int, numbers: Iterator[int],
           clustered: bool = True) -> dict[str, Any]:  # fmt: skip
    """`chats` messages to new chats over `targets`, each answered in one step; until every
    one is answered, then each checked (on another target when there are several)."""
    first = next(numbers)
    tokens = [f"#{first}-{i}#" for i in range(chats)]
    for token in tokens:  # each chat its own answer: one given to the wrong chat shows
        parts.llm.add_rule(last_user_contains(token), Reply(answer(f"answer {token}")), times=1)
    before = taken(targets[0]) if clustered else {}
    sent: dict[int, str] = {}
    refused = [0]
    queue = iter(range(chats))
    lock = threading.Lock()

    def sender() -> None:
        while True:
            with lock:
                i = next(queue, None)
            if i is None:
                return
            target = targets[i % len(targets)]
            for _ in range(100):
                try:
                    found = api(target, "POST", "/api/v1/message",
                                {"message": f"chat {tokens[i]} please", "wait": False})  # fmt: skip
                    break
                except ApiError as exc:
                    if exc.status != 503:  # 503: every node at its limit; try again
                        raise
                    with lock:
                        refused[0] += 1
                    time.sleep(0.2)
            else:
                raise RuntimeError(f"chat {i} was refused 100 times")
            with lock:
                sent[i] = found["context_id"]

    with PeakMemory({str(i): server for i, server in enumerate(targets)}) as memory:
        began = time.time()  # the answers' log items are stamped with this clock
        together([sender] * SENDERS)
        if len(sent) != chats:
            raise RuntimeError(f"{chats - len(sent)} of {chats} messages were not sent")
        answered = until_answered(parts, targets, sent)
    wrong, last = check_chats(targets, sent, tokens)
    spread_ = taken_since(before, taken(targets[0])) if clustered else {}
    shown = "/".join(str(n) for n in spread_.values())
    note = (
        f"{len(set(sent.values()))} chats made; {answered} answered;"
        f" {wrong} lost, doubled or mixed up; {refused[0]} refusals (503) sent again; timed"
        " from the first send to the last answer's log item (its time stamp)"
    )
    if clustered:
        note += f"; runs taken per node ({', '.join(spread_)}): {shown}"
    return {"wall": last - began, "wrong": wrong, "note": note, "memory": memory}


def until_answered(parts: Parts, targets: list[ServerProcess], sent: dict[int, str]) -> int:
    """Wait until the model was asked for every chat's answer, then until every chat shows
    its answer and no run; the number answered (all of them, or a RuntimeError)."""
    last, progress = parts.llm.pending(), time.monotonic()
    while parts.llm.pending():
        if parts.llm.pending() != last:
            last, progress = parts.llm.pending(), time.monotonic()
        if time.monotonic() - progress > 60:
            break  # no progress for a minute: the check below says which are missing
        time.sleep(0.02)
    waiting = dict(sent)
    deadline = time.monotonic() + 60
    while waiting and time.monotonic() < deadline:
        for i, chat_id in list(waiting.items()):
            view = api(targets[i % len(targets)], "GET", f"/api/v1/chats/{chat_id}")
            if not view["chat"]["running"] and any(
                    item["type"] == "response" for item in view["log"]):  # fmt: skip
                del waiting[i]
        if waiting:
            time.sleep(0.1)
    if waiting:
        raise RuntimeError(f"{len(waiting)} chats were never answered, e.g."
                           f" {list(waiting.values())[:5]} (see the nodes' logs)")  # fmt: skip
    return len(sent)


def check_chats(targets: list[ServerProcess], sent: dict[int, str],
                tokens: list[str]) -> tuple[int, float]:  # fmt: skip
    """Each chat read on another target than it was sent to: its message and its own
    answer, each once. The number of chats where that is not so, and when the last answer
    came (its log item's time stamp)."""
    wrong, last = 0, 0.0
    for i, chat_id in sent.items():
        log = api(targets[(i + 1) % len(targets)], "GET", f"/api/v1/chats/{chat_id}")["log"]
        users = [item["content"] for item in log if item["type"] == "user"]
        answers = [item for item in log if item["type"] == "response"]
        last = max([last, *(item["timestamp"] for item in answers)])
        if users != [f"chat {tokens[i]} please"] or [a["content"] for a in answers] != [
            f"answer {tokens[i]}"
        ]:
            wrong += 1
            if wrong <= 3:
                print(f"chat {chat_id}: messages {users}, answers {answers}")
    if len(set(sent.values())) != len(sent):
        wrong += len(sent) - len(set(sent.values()))
    return wrong, last
