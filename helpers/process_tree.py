"""Ending every process a code session started, and reaping what comes back to Cadre.

A session's program is the leader of its own session (setsid), so everything
it starts shares its session id unless it makes a session of its own; the
parent links catch those too. Cadre is a child subreaper: a process whose
parent dies first is handed to Cadre rather than to init, and is reaped here,
so nothing is left running or as a zombie. Linux does not reuse a pid while a
session still carries it as its id, so matching by session id is safe even
after the leader has gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    session: int


def processes() -> list[Proc]:
    """Every process visible in /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The name in parentheses may hold spaces; the fields after it are fixed.
        fields = stat.rsplit(")", 1)[1].split()
        found.append(Proc(int(entry.name), int(fields[1]), fields[0], int(fields[3])))
    return found


def members(leader: int, procs: list[Proc]) -> list[int]:
    """The processes of `leader`'s session and all its descendants, parents first."""
    children: dict[int, list[int]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: list[int] = []
    todo = [leader]
    while todo:
        below = children.get(todo.pop(0), [])
        found.extend(below)
        todo.extend(below)
    found += [
        p.pid for p in procs if p.session == leader and p.pid != leader and p.pid not in found
    ]
    return found


def kill_session(leader: int, leader_alive: bool) -> list[int]:
    """SIGKILL everything of `leader`'s session (and the leader while it lives).

    Frozen first (SIGSTOP) so nothing forks while it is walked. Returns the
    killed members other than the leader, for `reap` once the leader is waited for.
    """
    own = [leader] if leader_alive else []
    _signal_all(own + members(leader, processes()), signal.SIGSTOP)
    found = members(leader, processes())  # anything forked before the stop took
    _signal_all(reversed(own + found), signal.SIGKILL)
    return found


def reap(pids: Iterable[int], timeout: float = 2.0) -> None:
    """Collect the exit status of killed processes that came to Cadre."""
    deadline = time.monotonic() + timeout
    for victim in pids:
        while True:
            try:
                done, _ = os.waitpid(victim, os.WNOHANG)
            except ChildProcessError:
                break  # not ours: its own parent reaped it
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.005)


def reap_zombies(leader: int) -> None:
    """Reap members of `leader`'s session that died after coming to Cadre (a double fork)."""
    me = os.getpid()
    zombies = [
        p.pid for p in processes()
        if p.ppid == me and p.state == "Z" and p.session == leader and p.pid != leader
    ]  # fmt: skip
    reap(zombies, timeout=0)


def become_subreaper() -> None:
    """Adopt orphaned descendants (Linux `PR_SET_CHILD_SUBREAPER`) so they can be reaped here."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for victim in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, sig)
