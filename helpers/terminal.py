"""One persistent process in a pseudo-terminal: a shell, a Python or a Node.js session.

Code is never typed into the terminal: it is written to a file and the
session is told to run that file (the shell sources it, the REPL drivers
execute it), so code of any length and shape arrives whole, and a `cd` or a
variable stays for the next call. The terminal's echo is off; what comes
back is the program's own output, read on the agents' event loop as it
arrives. Each session prints a readiness marker when a run is over (the
shell through its prompt, with the exit code), so "finished" is never
guessed from silence. A program that waits for an answer gets it typed
into the terminal with `send`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ctypes
import errno
import os
import shutil
import signal
import subprocess
import termios
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from helpers import terminal_output
from helpers.terminal_output import Marker

#: Seconds of silence after which a question at the end of the output counts as asked.
QUESTION_IDLE = 0.8
#: Characters of the output's end kept for the page while a run streams.
SHOWN_LIMIT = 64_000
#: Characters around a chunk searched for the readiness marker (longer than the marker).
MARKER_ROOM = 64
#: Seconds a session may take to print its first readiness marker.
START_TIMEOUT = 15.0

Outcome = Literal["done", "question", "first_timeout", "idle_timeout", "total_timeout", "exited"]


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait: for the first output, between outputs, and in all."""

    first: float = 30.0
    between: float = 15.0
    total: float = 180.0


@dataclass
class Collected:
    """What one wait for output brought: the text, why it ended, the exit code if done."""

    text: str
    outcome: Outcome
    exit_code: int | None = None


class SessionError(RuntimeError):
    """The session's program could not be started or is gone."""


class TerminalSession:
    """A program in a pseudo-terminal whose output is collected as it arrives."""

    def __init__(
        self, argv: list[str], cwd: Path, env: dict[str, str], scratch: Path, marker: Marker
    ) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.scratch = scratch
        self.marker = marker
        self.process: subprocess.Popen[bytes] | None = None
        self._master = -1
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._unread = ""  # output not yet handed to the agent
        self._arrived = asyncio.Event()
        self._last_output = 0.0
        self._eof = False
        self._runs = 0
        #: True from a run's start until its marker (or the program's end) is seen.
        self.busy = False

    # -- life --------------------------------------------------------------

    async def start(self) -> None:
        """Start the program and wait for its first readiness marker."""
        become_subreaper()
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHO  # the code's own text is not output
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        # setsid --ctty gives the program its own session with this terminal as the
        # controlling one (job control, /dev/tty, hang-up when Cadre goes away).
        setsid = shutil.which("setsid")
        argv = [setsid, "--ctty", *self.argv] if setsid else self.argv
        try:
            self.process = subprocess.Popen(
                argv, cwd=self.cwd, env=self.env, stdin=slave, stdout=slave, stderr=slave,
                start_new_session=setsid is None, close_fds=True,
            )  # fmt: skip
        except OSError as exc:
            os.close(master)
            raise SessionError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from exc
        finally:
            os.close(slave)
        self._master = master
        os.set_blocking(master, False)
        asyncio.get_running_loop().add_reader(master, self._read)
        started = await self.collect(Timeouts(START_TIMEOUT, START_TIMEOUT, START_TIMEOUT))
        if started.outcome != "done":
            self.kill()
            raise SessionError(
                f"{self.argv[0]} did not become ready ({started.outcome}): {started.text[-500:]}"
            )

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self._eof

    def kill(self) -> None:
        """End the program and everything it started; no process is left behind."""
        # The tree goes first: closing the terminal would hang up the shell, whose
        # children would then be orphans no longer found below it.
        if self.process is not None:
            orphans = kill_tree(self.process.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(2)
            # Only now, with their parent gone, have the killed descendants come to us.
            reap(orphans)
        if self._master >= 0:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._master)
            os.close(self._master)
            self._master = -1
        self._eof = True

    # -- running -----------------------------------------------------------

    def run_file(self, code: str, suffix: str, command: Callable[[Path], str]) -> None:
        """Write `code` to a new file and type `command(file)` into the terminal."""
        self._runs += 1
        self.busy = True
        path = self.scratch / f"run-{self._runs}{suffix}"
        path.write_text(code, encoding="utf-8")
        self.send(command(path))

    def send(self, text: str) -> None:
        """Type `text` and Enter into the terminal."""
        if not self.alive:
            raise SessionError("the session has ended")
        data = (text.rstrip("\n") + "\n").encode("utf-8")
        while data:
            try:
                written = os.write(self._master, data)
            except BlockingIOError:
                time.sleep(0.01)  # the terminal's buffer is full; the program reads it soon
                continue
            data = data[written:]

    async def collect(
        self, timeouts: Timeouts, on_output: Callable[[str], None] | None = None
    ) -> Collected:
        """Hand over output until the run is done, a question is asked or a timeout passes.

        `on_output` gets the last `SHOWN_LIMIT` characters of cleaned output
        each time more arrives (the whole of a huge output is only joined once).
        """
        began = time.monotonic()
        pieces: list[str] = []
        tail = ""  # the end of the raw output: where markers and questions are
        while True:
            if self._unread:
                chunk, self._unread = self._unread, ""
                pieces.append(chunk)
                tail = (tail + chunk)[-SHOWN_LIMIT:]
                done = self.marker.pattern.search(tail[-(len(chunk) + MARKER_ROOM) :])
                if on_output is not None:
                    on_output(terminal_output.shown(self.marker.find(tail)[0]))
                if done:
                    self.busy = False
                    return self._result(pieces, "done")
            if self._eof:
                self.busy = False
                result = self._result(pieces, "exited")
                result.exit_code = await asyncio.to_thread(self._exit_code)
                return result
            outcome = self._expired(timeouts, began, bool(pieces), tail)
            if outcome is not None:
                return self._result(pieces, outcome)
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), timeout=self._next_check(timeouts))

    def _expired(
        self, timeouts: Timeouts, began: float, any_output: bool, tail: str
    ) -> Outcome | None:
        now = time.monotonic()
        quiet = now - max(self._last_output, began)
        if now - began >= timeouts.total:
            return "total_timeout"
        if not any_output and now - began >= timeouts.first:
            return "first_timeout"
        # A question is told apart from mere silence first: it is the likelier reason.
        if any_output and quiet >= min(QUESTION_IDLE, timeouts.between):
            if terminal_output.asks_question(terminal_output.clean(tail[-MARKER_ROOM * 4 :])):
                return "question"
        if any_output and quiet >= timeouts.between:
            return "idle_timeout"
        return None

    def _result(self, pieces: list[str], outcome: Outcome) -> Collected:
        visible, code = self.marker.find("".join(pieces))
        return Collected(terminal_output.clean(visible), outcome, code)

    def _next_check(self, timeouts: Timeouts) -> float:
        return max(0.05, min(QUESTION_IDLE / 2, timeouts.first, timeouts.between, timeouts.total))

    def _exit_code(self) -> int | None:
        if self.process is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.process.wait(2)
        return None

    def _read(self) -> None:
        """Called by the loop when the terminal has output (or has closed)."""
        try:
            data = os.read(self._master, 65536)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EIO:  # EIO: the program closed the terminal
                raise
            data = b""
        if not data:
            self._eof = True
            asyncio.get_running_loop().remove_reader(self._master)
        else:
            self._unread += self._decoder.decode(data)
            self._last_output = time.monotonic()
        self._arrived.set()


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, children before their own children."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The name in parentheses may hold spaces; fields after it are fixed.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        children = parents.get(todo.pop(0), [])
        found.extend(children)
        todo.extend(children)
    return found


def kill_tree(pid: int) -> list[int]:
    """SIGKILL `pid` and all its descendants; returns the descendants, for `reap`.

    The tree is frozen first (SIGSTOP) so nothing forks while it is walked.
    Cadre is a child subreaper, so a descendant whose parent dies first
    comes to it rather than to init: once `pid` is waited for, `reap` the
    rest and nothing is left running or as a zombie.
    """
    tree = [pid, *descendants(pid)]
    _signal_all(tree, signal.SIGSTOP)
    tree = [pid, *descendants(pid)]  # anything forked before the stop took
    _signal_all(reversed(tree), signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the session's group, for any it missed
    return tree[1:]


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for victim in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, sig)


def reap(pids: list[int], timeout: float = 2.0) -> None:
    """Collect the exit status of killed processes that came to Cadre (no zombies)."""
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
    """Adopt orphaned descendants (Linux `PR_SET_CHILD_SUBREAPER`), so `kill_tree` can reap them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


_PR_SET_CHILD_SUBREAPER = 36
