"""Takeover after SIGKILL, for bench/cluster.py: a run held mid-stream (the fake server
holds its reply) on a node of the cluster; that node killed, every process of it at once
(SIGKILL: no goodbye); the seconds until another node holds the chat's lease, and until the
run goes on there (a "Continuing" item in its log, read on a live node). The killed node is
started again between samples, while the run it left goes on elsewhere.

Also, from the nodes' logs: the chats taken over from a node that was alive (its heartbeat
came later than the TTL), which a short TTL on a busy machine makes happen.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench.cluster_parts import START_TIMEOUT, ApiError, Parts, api, late_leases
from bench.harness import Row
from cluster.config import DEFAULT_TTL
from cluster.leases import lease_key
from tests.support.agents import answer, cut_before, wait_for
from tests.support.fake_llm import Reply, last_user_contains
from tests.support.server_process import ServerProcess

#: The issue's target: seconds from a node's death to its chats going on elsewhere.
TAKEOVER_TARGET = 15.0
#: Takeovers measured (the killed node started again between them).
SAMPLES = 3


def takeover_rows(parts: Parts) -> list[Row]:
    ttl = parts.ttl or DEFAULT_TTL
    leases, goes_on, restarts = [], [], []
    restart: Restart | None = None
    try:
        for n in range(SAMPLES):
            if restart is not None:  # three nodes for each sample
                restarts.append(restart.done())
            lease, going, restart = takeover(parts, n, ttl, again=n < SAMPLES - 1)
            leases.append(lease)
            goes_on.append(going)
    finally:
        if restart is not None:  # never a node started after the end stopped them all
            restart.join()
    how = (f"median of {len(leases)} SIGKILLs (every process of the node at once) of the"
           f" node running a chat held mid-stream, CADRE_NODE_TTL {ttl:g} s (heartbeat every"
           f" {ttl / 3:.1f} s)")  # fmt: skip
    return [
        Row(f"cluster: takeover after SIGKILL, TTL {ttl:g} s: until another node holds the"
            " lease", statistics.median(leases), "s", TAKEOVER_TARGET,
            note=f"{how}; each: {', '.join(f'{s:.1f}' for s in leases)} s."),
        Row(f"cluster: takeover after SIGKILL, TTL {ttl:g} s: until the run goes on there"
            " ('Continuing' in its log)", statistics.median(goes_on), "s",
            TAKEOVER_TARGET,
            note=f"each: {', '.join(f'{s:.1f}' for s in goes_on)} s; the killed node started"
                 f" again in {', '.join(f'{s:.0f}' for s in restarts)} s."),
    ]  # fmt: skip


class Restart(threading.Thread):
    """A killed node started again on a thread of its own, while the run it left goes on
    on another node (its start-up's seconds of imports need not hold the next sample)."""

    def __init__(self, server: ServerProcess) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.seconds = 0.0
        self.failure: BaseException | None = None
        self.start()

    def run(self) -> None:
        began = time.monotonic()
        try:
            self.server.start(START_TIMEOUT, ready=True)
        except BaseException as exc:  # noqa: BLE001 - raised by `done`
            self.failure = exc
        self.seconds = time.monotonic() - began

    def done(self) -> float:
        """Seconds until the node said ready again."""
        self.join()
        if self.failure is not None:
            raise self.failure
        return self.seconds


def takeover(parts: Parts, n: int, ttl: float, again: bool) -> tuple[float, float, Restart | None]:
    """One sample: seconds from the kill to the lease taken, and to the run going on; the
    killed node's new start (`again`) once they are measured."""
    gate = threading.Event()
    held = Reply(cut_before(answer(f"Never finished {n}."), "finished"), holds={1: gate})
    finished = f"Finished after takeover {n}."
    message = f"a long job #{n}#"
    # The run's first call, then the call that goes on with it elsewhere: both this chat's
    # alone (a chat another node took over meanwhile may ask too: see `late_leases`).
    for reply in (held, Reply(answer(finished))):
        parts.llm.add_rule(last_user_contains(message), reply, times=1)
    sender = next(iter(parts.live().values()))
    chat_id = api(sender, "POST", "/api/v1/message",
                  {"message": message, "wait": False})["context_id"]  # fmt: skip
    redis = parts.redis.client()
    try:
        runner = wait_for(lambda: redis.get(lease_key(chat_id)), 30, "the run's lease")
        wait_for(lambda: saved_mid_step(parts.usr, chat_id), 30, "the run's step saved")
        dying = parts.nodes[runner]
        killed = time.monotonic()
        parts.kills.append((runner, time.time()))
        for pid in dying.pids():
            os.kill(pid, signal.SIGKILL)
        assert dying.process is not None
        dying.process.wait(10)
        gate.set()  # the dead node's stream: nobody reads it any more
        survivor = next(s for name, s in parts.live().items() if name != runner)
        wait_for(lambda: redis.get(lease_key(chat_id)) not in (None, runner), ttl * 3 + 30,
             "another node taking the chat's lease")  # fmt: skip
        lease = time.monotonic() - killed
        wait_for(lambda: log_of(survivor, chat_id, "Continuing"), ttl * 3 + 30,
             "the run going on on another node")  # fmt: skip
        going = time.monotonic() - killed
        restart = Restart(dying) if again else None
        try:
            final = wait_for(lambda: answered(survivor, chat_id, finished), 60, "the run's answer")
        except AssertionError as exc:  # waited in vain: the chat's log says why
            items = api(survivor, "GET", f"/api/v1/chats/{chat_id}")["log"]
            shown = [(i["type"], i["heading"], i["content"][:60]) for i in items]
            raise RuntimeError(f"{exc}; chat {chat_id}'s log: {shown}") from None
    finally:
        gate.set()
        redis.close()
    numbers = [item["no"] for item in final["log"]]
    if numbers != sorted(set(numbers)):
        raise RuntimeError(f"chat {chat_id}'s log is not every item once, in order: {numbers}")
    return lease, going, restart


def saved_mid_step(usr: Path, chat_id: str) -> bool:
    """Whether the chat is saved running with its step's reply begun: what a takeover reads
    (a paced save, within 2 s of the reply's first chunk)."""
    try:
        chat = json.loads((usr / "chats" / chat_id / "chat.json").read_text())
        return bool(chat["running"]) and any(i["type"] == "agent" for i in chat["log"]["items"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def log_of(server: ServerProcess, chat_id: str, heading: str) -> bool:
    """Whether the chat's log, read on `server`, has an item of that heading (False while
    the chat is not to be read there: its dead node's lease not expired yet)."""
    try:
        view = api(server, "GET", f"/api/v1/chats/{chat_id}", timeout=10)
    except (ApiError, OSError):
        return False
    return any(item.get("heading") == heading for item in view["log"])


def answered(server: ServerProcess, chat_id: str, text: str) -> dict[str, Any] | None:
    view = api(server, "GET", f"/api/v1/chats/{chat_id}")
    done = not view["chat"]["running"] and any(
        item["type"] == "response" and text in item["content"] for item in view["log"])  # fmt: skip
    return view if done else None


def late_row(parts: Parts) -> Row:
    ttl = parts.ttl or DEFAULT_TTL
    late, again = late_leases(parts.logs, parts.kills, ttl)
    return Row(f"cluster: chats taken over from a live node (its heartbeat later than the TTL,"
               f" {ttl:g} s)", late, "chats",
               note=f"over the whole run, from the nodes' logs. {again} of them had been saved"
                    " running: the node that took one ran it again while the late node's own"
                    " run went on (nothing stops that: cluster/redis_runs.py `keep` only logs"
                    " the lost lease). On this shared machine a short TTL can be outrun by a"
                    " late heartbeat.")  # fmt: skip
