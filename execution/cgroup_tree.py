"""A code session's processes in a cgroup v2 of their own, where the system lets Cadre make one.

The session's program joins the group before it runs (a small `sh` wrapper
writes itself into `cgroup.procs`, then execs the program), so every process
it ever starts is born inside; no `setsid` or double fork leaves a cgroup.
Ending the session freezes the group, notes its members (to reap those that
came to Cadre), and kills them all at once (`cgroup.kill`). The /proc
tracking of `AncestryTree` runs as well, for a member that moved itself to
another group (root can).

The group is made below Cadre's own cgroup, named after Cadre's pid and
start time: a group whose Cadre is gone (killed with SIGKILL) is ended when
the next session is made. Where cgroup v2 is not mounted or Cadre may not
write there (most desktop sessions of a normal user), `create` returns None
and the session is followed by `AncestryTree` alone.

A sandboxed session's limits (memory, processes) are set on its group where
the kernel gives it those controllers: where Cadre's own group hands them down
(`cgroup.subtree_control`: an operator's setting, or Cadre's group being the
root of the hierarchy). `limited` says which took; elsewhere the process limit
is RLIMIT_NPROC's (execution/sandbox_launch.py) and memory has none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import time
from pathlib import Path

from execution.process_tree import AncestryTree, start_time
from execution.sandbox import Limits

log = logging.getLogger(__name__)

PREFIX = "cadre-"
#: How long the kernel is given to freeze a group or to empty it after a kill.
SETTLE_TIMEOUT = 2.0
#: Joins the group named by $1, then becomes the program: `sh -c JOIN cadre-join PROCS ARGV...`.
JOIN = 'echo 0 > "$1" 2>/dev/null; shift; exec "$@"'


def own_cgroup() -> Path | None:
    """The folder of Cadre's own cgroup v2, when the unified hierarchy is mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    path = next((line[3:] for line in lines if line.startswith("0::")), None)
    if path is None:
        return None
    for mount in mounts:
        fields, _, tail = mount.partition(" - ")
        if not tail.startswith("cgroup2 "):
            continue
        root, point = fields.split()[3:5]
        relative = os.path.relpath(path, root)
        if not relative.startswith(".."):
            return Path(point) / relative if relative != "." else Path(point)
    return None


def _owner_alive(name: str) -> bool:
    """Whether the Cadre that made group `name` (cadre-<pid>-<start>-<mark>) still runs."""
    try:
        _, pid, start, _ = name.split("-", 3)
        return start_time(int(pid)) == int(start)
    except ValueError:
        return True  # not one of ours in the expected form: leave it alone


class CgroupTree(AncestryTree):
    """One session's processes in their own cgroup, with /proc tracking besides."""

    def __init__(self, group: Path, mark: str, sh: str) -> None:
        super().__init__(mark)
        self.group = group
        self.sh = sh
        self._checked = False
        #: The limits the kernel took for this group ("memory", "pids").
        self.limited: tuple[str, ...] = ()

    @classmethod
    def create(cls, mark: str, limits: Limits | None = None) -> CgroupTree | None:
        """A new group for a session (with `limits`, where the controllers are given), or
        None where cgroups cannot be used."""
        parent = own_cgroup()
        sh = shutil.which("sh")
        if parent is None or sh is None or not (parent / "cgroup.procs").exists():
            return None
        sweep(parent)
        group = parent / f"{PREFIX}{os.getpid()}-{start_time(os.getpid())}-{mark}"
        try:
            group.mkdir()
        except OSError as exc:
            log.debug("no cgroup for code sessions (%s): following them through /proc", exc)
            return None
        tree = cls(group, mark, sh)
        if limits is not None:
            tree.limited = _limit(parent, group, limits)
        return tree

    def wrap(self, argv: list[str]) -> list[str]:
        return [self.sh, "-c", JOIN, "cadre-join", str(self.group / "cgroup.procs"), *argv]

    @property
    def joined(self) -> bool:
        """Whether the session's program is in the group (from its start on, once it ran)."""
        return self.leader is not None and _in_group(self.leader, self.group)

    def checkpoint(self) -> None:
        if not self._checked:  # the first checkpoint: the program is up and has joined
            self._checked = True
            if not self.joined:
                log.info("a code session could not join its cgroup: following it through /proc")
        super().checkpoint()

    def kill(self, leader_alive: bool) -> list[int]:
        members: list[int] = []
        if self._procs():
            if _write(self.group / "cgroup.freeze", "1"):  # Linux 5.2 on
                _settle(self.group, "frozen 1")
            members = [pid for pid in self._procs() if pid != self.leader]
            if not _write(self.group / "cgroup.kill", "1"):  # before Linux 5.14
                for pid in members + ([self.leader] if leader_alive and self.leader else []):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
        escaped = super().kill(leader_alive)
        return list(dict.fromkeys(members + escaped))

    def _owns_zombie(self, pid: int) -> bool:
        return _in_group(pid, self.group)

    def close(self) -> None:
        """Remove the group once its killed members are gone."""
        _settle(self.group, "populated 0")
        try:
            self.group.rmdir()
        except FileNotFoundError:
            pass  # closed before
        except OSError as exc:
            log.warning("cgroup %s could not be removed: %s", self.group, exc)

    def _procs(self) -> list[int]:
        try:
            return [int(n) for n in (self.group / "cgroup.procs").read_text().split()]
        except OSError:
            return []


def sweep(parent: Path) -> None:
    """End the groups of Cadre processes that are gone (killed before they could)."""
    with contextlib.suppress(OSError):
        for group in parent.glob(f"{PREFIX}*"):
            if group.is_dir() and not _owner_alive(group.name):
                _write(group / "cgroup.kill", "1")
                _settle(group, "populated 0")
                with contextlib.suppress(OSError):
                    group.rmdir()
                log.info("ended the code session processes left in %s", group)


def _limit(parent: Path, group: Path, limits: Limits) -> tuple[str, ...]:
    """Set `limits` on `group` where its controllers are given; those that took."""
    wanted = {"memory": ("memory.max", limits.memory_mb * 1024 * 1024),
              "pids": ("pids.max", limits.processes)}  # fmt: skip
    wanted = {name: setting for name, setting in wanted.items() if setting[1] > 0}
    for name in wanted:
        # Given down where Cadre's group may (an operator's choice, or the hierarchy's root,
        # where a group may hold processes and give controllers both).
        _write(parent / "cgroup.subtree_control", f"+{name}")
    took = []
    for name, (file, value) in wanted.items():
        if (group / file).exists() and _write(group / file, str(value)):
            took.append(name)
    if "memory" in took:
        _write(group / "memory.swap.max", "0")  # the limit is of memory, not of swap too
    return tuple(took)


def _settle(group: Path, state: str) -> None:
    """Wait (briefly) until the group's `cgroup.events` says `state`."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if state in (group / "cgroup.events").read_text().splitlines():
                return
        except OSError:
            return
        time.sleep(0.005)


def _in_group(pid: int, group: Path) -> bool:
    """Whether process `pid` (a zombie too: it keeps its group) belongs to `group`."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return False
    path = next((line[3:] for line in lines if line.startswith("0::")), "")
    return path.rstrip("/").endswith("/" + group.name)


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False
