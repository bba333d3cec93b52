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

While nobody waits for its output, a session reads only until it holds
`UNREAD_LIMIT` characters: a program printing without end (`yes`) then waits on
its full terminal, costing Cadre nothing, and loses nothing of what it prints.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import os
import shutil
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path

from execution import process_tree, terminal_output
from execution.left_running import LeftRunning
from execution.process_tree import AncestryTree
from execution.terminal_output import (
    Collected,
    Marker,
    Notices,
    Outcome,
    OutputBuffer,
    Timeouts,
)
from helpers.errors import RepairableTold

#: Seconds of silence after which a question at the end of the output counts as asked.
QUESTION_IDLE = 0.8
#: Characters of the output's end kept for the page while a run streams.
SHOWN_LIMIT = 64_000
#: Characters around a chunk searched for the readiness marker (longer than the marker).
MARKER_ROOM = 64
#: Output past this many characters is cleaned off the event loop.
CLEAN_INLINE_LIMIT = 1_000_000
#: Most bytes typed into a terminal at once, and how long a full terminal is waited for.
SEND_LIMIT = 16_384
SEND_TIMEOUT = 1.0
#: Seconds a session may take to print its first readiness marker.
START_TIMEOUT = 15.0
#: Characters of output read while nobody waits for it; then the program waits.
UNREAD_LIMIT = 1_000_000


class SessionError(RepairableTold):
    """The session's program could not be started or is gone (told: helpers/told.py)."""


class TerminalSession:
    """A program in a pseudo-terminal whose output is collected as it arrives."""

    def __init__(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        scratch: Path,
        marker: Marker,
        tree: AncestryTree | None = None,
        runs: Path | None = None,
        pass_fds: tuple[int, ...] = (),
        stop_after: float = 0.0,
    ) -> None:
        self.argv = argv
        #: Descriptors the program keeps (a sandbox's plan and channel).
        self.pass_fds = pass_fds
        self.cwd = cwd
        self.scratch = scratch
        #: Where run files are written (`scratch` unless a folder in memory is given, which
        #: the session then owns and removes when it ends).
        self.runs = runs or scratch
        self.marker = marker
        #: Follows every process the session starts, so `kill` can end them all.
        self.tree = tree or AncestryTree()
        self.env = {**env, **self.tree.env()}
        self.process: subprocess.Popen[bytes] | None = None
        self._master = -1
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._output = OutputBuffer()  # what arrived since the last collect handed it over
        self._arrived = asyncio.Event()
        self._eof = False
        self._runs = 0
        self._run_file: Path | None = None
        #: True from a run's start until its marker (or the program's end) is seen.
        self.busy = False
        #: Why Cadre ended the session ("" while it runs, or when it ended by itself).
        self.stopped = ""
        #: Called once when the session ends (its proxy, its scratch space).
        self.on_end: list[Callable[[], None]] = []
        self._notices = Notices()
        self._watched = False  # a `collect` waits for the output now
        self._reading = False
        self._draining = False  # interrupted: read what comes, whoever waits
        #: Stops a command nobody waits for any more (execution/left_running.py).
        self.left = LeftRunning(stop_after, self.interrupt, self._unfinished, self.stop,
                                self.notice)  # fmt: skip

    # -- life --------------------------------------------------------------

    def spawn(self) -> None:
        """Start the program (`ready` waits for it)."""
        process_tree.become_subreaper()
        self.scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.cwd.mkdir(parents=True, exist_ok=True)
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHO  # the code's own text is not output
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        # setsid --ctty gives the program its own session with this terminal as the
        # controlling one (job control, /dev/tty, hang-up when Cadre goes away).
        setsid = shutil.which("setsid")
        argv = self.tree.wrap([setsid, "--ctty", *self.argv] if setsid else self.argv)
        try:
            self.process = subprocess.Popen(
                argv, cwd=self.cwd, env=self.env, stdin=slave, stdout=slave, stderr=slave,
                start_new_session=setsid is None, close_fds=True, pass_fds=self.pass_fds,
            )  # fmt: skip
        except OSError as exc:
            os.close(master)
            self.tree.close()
            why = exc.strerror or exc
            raise SessionError("fw.code.cannot_start.md", program=self.argv[0], error=why) from exc
        finally:
            os.close(slave)
        self.tree.adopt(self.process.pid)
        self._master = master
        os.set_blocking(master, False)
        self._resume_reading()

    async def ready(self) -> None:
        """Wait for the program's first readiness marker (SessionError: it did not come)."""
        try:
            started = await self.collect(Timeouts(START_TIMEOUT, START_TIMEOUT, START_TIMEOUT))
        except BaseException:
            self.kill()  # stopped while starting: a half-started session is never reused
            raise
        if started.outcome != "done":
            self.kill()
            raise SessionError("fw.code.not_ready.md", program=self.argv[0],
                               outcome=started.outcome, output=started.text[-500:])  # fmt: skip
        #: What the session printed before it was ready (a sandbox's warnings).
        self.start_text = started.text

    @property
    def reading(self) -> bool:
        """Whether output is read as it comes (not while nobody waits and much is unread)."""
        return self._reading

    @property
    def unread(self) -> int:
        """Characters of output read that no call has taken yet."""
        return self._output.size()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self._eof

    def kill(self) -> None:
        """End the program and everything it started; no process is left behind.

        Safe to call more than once, and after the program ended by itself.
        """
        self.left.disarm()
        # The processes go first: closing the terminal would hang up the shell,
        # and its children would be harder to find.
        if self.process is not None:
            orphans = self.tree.kill(self.process.poll() is None)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(2)
            # Only now, with their parent gone, have the killed members come to Cadre.
            process_tree.reap(orphans)
            self.tree.close()
        if self._master >= 0:
            self._pause_reading()
            os.close(self._master)
            self._master = -1
        for end in self.on_end:
            end()
        self.on_end.clear()
        self._forget_run_file()
        if self.runs != self.scratch:
            shutil.rmtree(self.runs, ignore_errors=True)
        self._eof = True
        self.busy = False

    def stop(self, why: str) -> None:
        """End the session for `why` (plain words: "its scratch space held more than..."),
        which the agent reads with what the session printed last."""
        if not self.stopped and not self._eof:
            self.stopped = why
        self.kill()
        self._arrived.set()  # a `collect` waiting now returns at once

    def interrupt(self) -> None:
        """Ctrl-C, as typed into the terminal: the command running now is interrupted."""
        if self._master >= 0:
            with contextlib.suppress(OSError):
                os.write(self._master, b"\x03")
            self._draining = True
            self._resume_reading()

    def _unfinished(self) -> bool:
        """Whether the run started last is still going (its marker not yet printed)."""
        if not (self.alive and self.busy):
            return False
        return not self.marker.pattern.search(self._output.end(MARKER_ROOM * 64))

    def notice(self, text: str) -> None:
        """Something the agent hears with the session's next result (first ones kept)."""
        self._notices.add(text)

    # -- running -----------------------------------------------------------

    def run_file(self, code: str, suffix: str, command: Callable[[Path], str]) -> None:
        """Write `code` to a new file (owner-only: it may hold a secret) and have it run."""
        self._runs += 1
        self._forget_run_file()
        path = self.runs / f"run-{self._runs}{suffix}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(code)
        self._run_file = path
        # A marker still waiting here is stale (a run abandoned earlier): not this run's end.
        if self._output:
            before, after = self._output.parts()
            self._output = OutputBuffer()
            self._output.append(self.marker.find(before + after)[0])
        self.busy = True
        self.send(command(path))

    def send(self, text: str) -> None:
        """Type `text` and Enter into the terminal."""
        if not self.alive:
            raise SessionError("fw.code.session_ended.md")
        data = (text.rstrip("\n") + "\n").encode("utf-8")
        if len(data) > SEND_LIMIT:
            raise SessionError("fw.code.typed_too_much.md", limit=SEND_LIMIT)
        deadline = time.monotonic() + SEND_TIMEOUT
        while data:
            try:
                written = os.write(self._master, data)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SessionError("fw.code.not_reading.md") from None
                time.sleep(0.01)
                continue
            data = data[written:]

    async def collect(
        self, timeouts: Timeouts, on_output: Callable[[str], None] | None = None
    ) -> Collected:
        """Hand over output until the run is done, a question is asked or a timeout passes.

        `on_output` gets the last `SHOWN_LIMIT` characters of cleaned output
        each time more arrives.
        """
        self._watched = True
        self.left.disarm()
        self._resume_reading()
        try:
            got = await self._collect(timeouts, on_output)
        finally:
            self._watched = False
        if got.outcome in ("first_timeout", "idle_timeout", "total_timeout"):
            self.left.arm()
        return got

    async def _collect(
        self, timeouts: Timeouts, on_output: Callable[[str], None] | None
    ) -> Collected:
        began = time.monotonic()
        seen = 0.0
        while True:
            output = self._output
            if output and output.last_arrival > seen:
                seen = output.last_arrival
                end = output.end(SHOWN_LIMIT)
                if on_output is not None:
                    on_output(terminal_output.shown(self.marker.find(end)[0]))
                if self.marker.pattern.search(end[-MARKER_ROOM * 64 :]):
                    return await self._handover("done")
            if self._eof:
                result = await self._handover("exited")
                result.exit_code = await asyncio.to_thread(self._exit_code)
                return result
            outcome = self._expired(timeouts, began)
            if outcome is not None:
                return await self._handover(outcome)
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), timeout=self._next_check(timeouts))

    def _expired(self, timeouts: Timeouts, began: float) -> Outcome | None:
        now = time.monotonic()
        output = self._output
        quiet = now - max(output.last_arrival, began)
        if now - began >= timeouts.total:
            return "total_timeout"
        if not output and now - began >= timeouts.first:
            return "first_timeout"
        # A question is told apart from mere silence first: it is the likelier reason.
        if output and quiet >= min(QUESTION_IDLE, timeouts.between):
            if terminal_output.asks_question(terminal_output.clean(output.end(MARKER_ROOM * 4))):
                return "question"
        if output and quiet >= timeouts.between:
            return "idle_timeout"
        return None

    async def _handover(self, outcome: Outcome) -> Collected:
        """The output so far, cleaned (off the loop when large), and a fresh buffer."""
        output, self._output = self._output, OutputBuffer()
        if outcome in ("done", "exited"):
            self.busy = False
            self._draining = False
            self._forget_run_file()
        if self.process is not None:
            self.tree.checkpoint()  # what the command started, remembered; what ended, reaped
        before, after = output.parts()
        code = self.marker.find(after)[1] if outcome == "done" else None

        def tidy() -> tuple[str, str]:
            return (
                terminal_output.clean(self.marker.find(before)[0]),
                terminal_output.clean(self.marker.find(after)[0]),
            )

        big = len(before) + len(after) > CLEAN_INLINE_LIMIT
        before, after = await asyncio.to_thread(tidy) if big else tidy()
        stopped = self.stopped if outcome == "exited" else ""
        notices = self._notices.take()
        return Collected(after, outcome, code, output.dropped, before, stopped, notices)

    def _next_check(self, timeouts: Timeouts) -> float:
        return max(0.05, min(QUESTION_IDLE / 2, timeouts.first, timeouts.between, timeouts.total))

    def _exit_code(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return None if self.process is None else self.process.wait(2)
        return None

    def _forget_run_file(self) -> None:
        if self._run_file is not None:
            self._run_file.unlink(missing_ok=True)
            self._run_file = None

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
            self._pause_reading()
            self._end_soon()
        else:
            self._output.append(self._decoder.decode(data))
            self._output.last_arrival = time.monotonic()
            if not (self._watched or self._draining) and self._output.size() >= UNREAD_LIMIT:
                self._pause_reading()  # nobody waits: the program waits (module docstring)
        self._arrived.set()

    def _end_soon(self) -> None:
        """The program closed its terminal: what goes with the session (its scratch space,
        proxy, group) goes once the program is waited for, not when the chat closes."""
        with contextlib.suppress(RuntimeError):  # no executor: Cadre stops, the chat closes
            waited = asyncio.get_running_loop().run_in_executor(None, self._exit_code)
            waited.add_done_callback(lambda _: self.kill())

    def _resume_reading(self) -> None:
        if not self._reading and self._master >= 0 and not self._eof:
            asyncio.get_running_loop().add_reader(self._master, self._read)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._reading:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._master)
            self._reading = False
