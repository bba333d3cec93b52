"""Following every process a code session starts, so that ending the session ends them all.

A session's program is the leader of its own session (setsid), but what it
starts may leave both its session (`setsid`) and its parent (a double fork).
`AncestryTree` follows them through /proc over time:

- Cadre is a child subreaper: an orphan comes to Cadre, not to init, so every
  process a session starts stays below Cadre while Cadre runs;
- each session's processes carry the variable `CADRE_SESSION=<random mark>`
  (a process inherits it from whoever started it), read back from
  /proc/<pid>/environ;
- the members seen at each command's end (`checkpoint`) are remembered, by
  pid and start time so a reused pid is never mistaken for one: this keeps
  even a member that cleared its environment.

Ending a session stops (SIGSTOP) every member, looks again until nothing new
appears, then kills them all; the killed processes that came to Cadre are
reaped here, so nothing is left running or as a zombie. Where cgroup v2 can
be used, `execution.cgroup_tree` does the same with the kernel's help.
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
#: The variable that marks a session's processes.
MARK_VARIABLE = "CADRE_SESSION"
#: Rounds of stop-and-look while ending a session (a member forking as it is stopped).
STOP_ROUNDS = 10


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    session: int
    #: Clock ticks after boot when the process started: with the pid, its identity.
    start: int


def processes() -> list[Proc]:
    """Every process visible in /proc (plain reads: this runs at each command's end)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The name in parentheses may hold spaces; the fields after it are fixed.
        fields = stat.rsplit(b")", 1)[1].split()
        found.append(
            Proc(int(name), int(fields[1]), fields[0].decode(), int(fields[3]), int(fields[19]))
        )
    return found


def start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot), None when it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def carries(pid: int, variable: str, value: str) -> bool:
    """True when process `pid` was started with `variable=value` in its environment."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:  # gone, a zombie, or another user's
        return False
    return f"{variable}={value}".encode() in environ.split(b"\0")


def descendants(roots: Iterable[int], procs: list[Proc]) -> list[int]:
    """`roots` (those still present) and everything below them, parents first."""
    children: dict[int, list[int]] = {}
    present = set()
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc.pid)
        present.add(proc.pid)
    found: list[int] = []
    todo = [pid for pid in dict.fromkeys(roots) if pid in present]
    seen = set(todo)
    while todo:
        pid = todo.pop(0)
        found.append(pid)
        for child in children.get(pid, []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return found


class AncestryTree:
    """The processes of one code session, followed through /proc."""

    def __init__(self, mark: str | None = None) -> None:
        self.mark = mark or os.urandom(8).hex()
        self.leader: int | None = None
        self._leader_start: int | None = None
        #: Members seen so far: pid -> start time.
        self._seen: dict[int, int] = {}

    def env(self) -> dict[str, str]:
        """The variables the session's program is started with (its mark)."""
        return {MARK_VARIABLE: self.mark}

    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that starts the session's program (as is, here)."""
        return argv

    def adopt(self, leader: int) -> None:
        """The session's program has started as `leader`."""
        self.leader = leader
        self._leader_start = start_time(leader)

    def checkpoint(self) -> None:
        """At a command's end: remember the members running now, reap those that ended."""
        procs = processes()
        starts = {p.pid: p.start for p in procs}
        for pid in self._members(procs, everywhere=False):
            if pid != self.leader:
                self._seen[pid] = starts[pid]
        self._reap_exited(procs)

    def kill(self, leader_alive: bool) -> list[int]:
        """SIGKILL every member (and the leader while it lives).

        Members are stopped first and looked for again until no new one turns
        up, so nothing forks away while the tree is walked. Returns the killed
        members other than the leader, for `reap` once the leader is waited for.
        """
        own = [self.leader] if leader_alive and self.leader else []
        _signal_all(own, signal.SIGSTOP)
        stopped: list[int] = []
        marks: dict[tuple[int, int], bool] = {}  # each process's environment is read once
        for _ in range(STOP_ROUNDS):
            found = self._members(processes(), everywhere=True, marks=marks)
            new = [p for p in found if p not in stopped]
            new = [p for p in new if p != self.leader]
            if not new:
                break
            _signal_all(new, signal.SIGSTOP)
            stopped += new
        _signal_all(reversed(own + stopped), signal.SIGKILL)
        self._seen.clear()
        return stopped

    def _reap_exited(self, procs: list[Proc]) -> None:
        """Reap members that ended after coming to Cadre (their parent died first).

        A zombie in the leader's session other than the leader is no session's
        leader, so never a process some `Popen` waits for.
        """
        me = os.getpid()
        zombies = [
            p.pid for p in procs
            if p.ppid == me and p.state == "Z" and p.pid != self.leader
            and (self._seen.get(p.pid) == p.start or p.session == self.leader
                 or self._owns_zombie(p.pid))
        ]  # fmt: skip
        reap(zombies, timeout=0)
        for pid in zombies:
            self._seen.pop(pid, None)

    def _owns_zombie(self, pid: int) -> bool:
        """Whether a dead process (its environment unreadable now) was one of the session's."""
        return False

    def close(self) -> None:
        """Release what following the session needed (nothing, here)."""

    def _members(
        self, procs: list[Proc], everywhere: bool, marks: dict[tuple[int, int], bool] | None = None
    ) -> list[int]:
        """The session's processes: below the leader, in its session, remembered, or marked.

        Marks are read of the processes that came to Cadre, or of every process
        when `everywhere` (when ending the session: worth a full look); `marks`
        keeps what was read, by pid and start time, for the next look.
        """
        marks = {} if marks is None else marks
        me = os.getpid()
        live = [p for p in procs if p.state != "Z"]
        # The leader's pid (and its session id) mean the session only while the leader is
        # there, reaped not yet: after that the pid may name an unrelated process.
        here = any(p.pid == self.leader and p.start == self._leader_start for p in procs)
        roots = [self.leader] if here and self.leader else []
        roots += [p.pid for p in live if here and p.session == self.leader]
        roots += [p.pid for p in live if self._seen.get(p.pid) == p.start]
        for p in live:
            if p.pid != me and (everywhere or p.ppid == me):
                key = (p.pid, p.start)
                if key not in marks:
                    marks[key] = carries(p.pid, MARK_VARIABLE, self.mark)
                if marks[key]:
                    roots.append(p.pid)
        return [pid for pid in descendants(roots, live) if pid != me]


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


def become_subreaper() -> None:
    """Adopt orphaned descendants (Linux `PR_SET_CHILD_SUBREAPER`) so they can be reaped here."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for victim in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, sig)
