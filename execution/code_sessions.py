"""The code sessions of one chat: a terminal, Python or Node.js process per agent and number.

Each agent has its own numbered sessions (a subordinate's `cd` does not move
its superior), and each number can hold one process per runtime. `output`
and `input` go to the runtime last used under that number. Sessions live
on the agents' event loop and are closed with their chat.

A session starts in the sandbox the settings choose (execution/sandbox_choice.py),
in a room of the work folder (writable), the chat's folder and the drivers
(read-only), with Cadre's folder and user data hidden. A sandboxed session also
gets a scratch space of its own on disk (execution/scratch.py, watched for its
size), its limits, and its network's way out through Cadre's checking proxy
(execution/way_out.py); all of it ends with the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import secrets
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from execution import run_files, sandbox_choice
from execution import scratch as scratch_space
from execution.cgroup_tree import CgroupTree
from execution.process_tree import AncestryTree
from execution.sandbox import Confined, Limits, NoSandbox, Room, Sandbox, find_program
from execution.sandbox_launch import WARNING_PREFIX
from execution.terminal import SessionError, TerminalSession
from execution.terminal_output import Marker
from execution.way_out import NoWayOut, open_way_out
from helpers.checking_proxy import CheckingProxy
from helpers.exposure import expanded
from helpers.files import base_path, usr_dir
from helpers.folders import work_dir
from helpers.outbound import OutboundPolicy
from helpers.settings import load_settings
from helpers.told import told

if TYPE_CHECKING:
    from helpers.settings import Settings

log = logging.getLogger(__name__)

Runtime = Literal["terminal", "python", "nodejs"]
DRIVERS = base_path("execution", "terminal_drivers")


#: Sessions one chat runs at once: each brings its own process limit, scratch space and
#: memory, which an agent opening session after session would otherwise multiply.
MOST_SESSIONS = 16
#: Starts of a sandboxed session tried when a path to cover vanished meanwhile (`VANISHED`).
START_ATTEMPTS = 3
#: What bubblewrap says when it cannot make a mount point in the read-only system: the
#: path's file went away, or its folder with it.
VANISHED = ("Can't create file at", "Can't mkdir parents for")


@dataclass(frozen=True)
class Launch:
    """How to start a runtime and how to make it run a file of code."""

    argv: list[str]
    suffix: str
    #: The line typed into the session to run a file (the shell sources it).
    command: str
    #: Variables the program needs besides the session's own (a REPL driver's marker token,
    #: which it removes at once).
    env: dict[str, str] = field(default_factory=dict)


def launch(
    runtime: Runtime,
    node: str,
    marker: Marker,
    scratch: Path,
    python: str = sys.executable,
    find: Callable[[str], str | None] = shutil.which,
) -> Launch:
    """How to start `runtime`; SessionError when its program is missing.

    `python`: the interpreter of the python runtime; `find`: where a program is, as
    the session will see it (a sandbox may hide some of the host's).
    """
    if runtime == "terminal":
        shell = find("bash")
        if shell is None:
            raise SessionError("fw.code.no_bash.md")
        # The prompt is the readiness marker with the exit code; set in an rc file,
        # not the environment, so a shell started by a command does not inherit it.
        rcfile = scratch / "bashrc"
        rcfile.write_text(f"PS1='{marker.prompt}'\nPS2=''\nunset PROMPT_COMMAND\n")
        argv = [shell, "--noprofile", "--rcfile", str(rcfile), "--noediting", "-i"]
        return Launch(argv, ".sh", ". '{path}'")
    if runtime == "python":
        return Launch([python, "-u", str(DRIVERS / "python_repl.py")], ".py", "{path}",
                      {"CADRE_READY_TOKEN": marker.token})  # fmt: skip
    found = find(node)
    if found is None:
        raise SessionError("fw.code.no_node.md", node=repr(node))
    return Launch([found, str(DRIVERS / "node_repl.js")], ".js", "{path}",
                  {"CADRE_READY_TOKEN": marker.token})  # fmt: skip


#: What a session takes from Cadre's environment: where programs are, whose session it
#: is, its language and time zone. Nothing else (provider keys, Cadre's own CADRE_*
#: settings, tokens of other tools) reaches a command unless `code_exec_env` adds it.
INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR")


def session_env(added: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a session starts with: the basics, quiet pagers, and `added` last."""
    env = {k: v for k, v in os.environ.items() if k in INHERITED or k.startswith("LC_")}
    env.setdefault("PATH", os.defpath)
    with contextlib.suppress(KeyError):  # a uid without a passwd entry (some containers)
        user = pwd.getpwuid(os.getuid())
        env.setdefault("HOME", user.pw_dir)
        env.setdefault("USER", user.pw_name)
        env.setdefault("LOGNAME", user.pw_name)
    env.update(
        TERM="dumb", PAGER="cat", GIT_PAGER="cat", HISTFILE="/dev/null", NO_COLOR="1",
        PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8",
    )  # fmt: skip
    env.update(added or {})
    return env


class CodeSessions:
    """One chat's running sessions, keyed by (agent number, session number, runtime)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._sessions: dict[tuple[int, int, Runtime], TerminalSession] = {}
        self._launches: dict[tuple[int, int, Runtime], Launch] = {}
        self._last: dict[tuple[int, int], Runtime] = {}
        #: What sessions started with warnings said (commands run as root inside...), once.
        self.warned: set[str] = set()

    async def get(
        self,
        agent: int,
        number: int,
        runtime: Runtime,
        settings: Settings,
        policy: Callable[[], OutboundPolicy] = OutboundPolicy,
        home: Path | None = None,
    ) -> tuple[TerminalSession, Launch, bool]:
        """The live session for these keys, started when missing; True when new.

        A new session runs in `settings.work_dir` (the work folder of `home`'s owner, the
        chat's: helpers/folders.py `work_dir`; None: usr/'s), in the sandbox the settings
        choose, with `code_exec_env` added to its minimal environment; `policy` is the
        outbound policy its commands' connections are checked by (read at each connection).
        """
        key = (agent, number, runtime)
        self._last[(agent, number)] = runtime
        session = self._sessions.get(key)
        if session is not None and session.alive:
            return session, self._launches[key], False
        if session is not None:
            session.kill()
        self._check_room(agent)
        try:
            session, how = await self._start(agent, number, runtime, settings, policy, home)
        except BaseException:
            self._last.pop((agent, number), None)
            raise
        self._sessions[key], self._launches[key] = session, how
        return session, how, True

    def _check_room(self, agent: int) -> None:
        """SessionError when the chat already runs `MOST_SESSIONS`, naming what may be reset."""
        alive = [key for key, session in self._sessions.items() if session.alive]
        if len(alive) < MOST_SESSIONS:
            return
        named = [
            told("fw.code.session_name.md", own=owner == agent, owner=owner, runtime=runtime,
                 number=number)
            for owner, number, runtime in sorted(alive, key=lambda k: (k[0] != agent, k))
        ]  # fmt: skip
        raise SessionError("fw.code.too_many_sessions.md", count=len(alive), sessions=named)

    def room(
        self,
        settings: Settings,
        runs: Path | None = None,
        space: Path | None = None,
        home: Path | None = None,
    ) -> Room:
        """What this chat's sessions may see and use: the work folder (of `home`'s owner),
        the chat's folder, the drivers and the session's run files, its scratch space,
        its limits."""
        return Room(
            work=work_dir(settings.work_dir, home),
            readable=(self.scratch.parent, DRIVERS, *([runs] if runs else [])),
            hidden=(base_path(), usr_dir(), *others_work(home)),
            network=settings.code_exec_network,
            scratch=space,
            limits=Limits(settings.code_exec_max_processes, settings.code_exec_memory_mb),
        )

    async def _start(
        self,
        agent: int,
        number: int,
        runtime: Runtime,
        settings: Settings,
        policy: Callable[[], OutboundPolicy],
        home: Path | None,
    ) -> tuple[TerminalSession, Launch]:
        choice = await asyncio.to_thread(sandbox_choice.choose, settings)
        if choice.broken:
            raise SessionError(
                "fw.code.sandbox_broken.md", sandbox=repr(choice.wanted), why=choice.broken
            )
        # Checked again now (helpers/exposure.py): a work folder swapped for a link since it
        # was saved, or one that would show what the sandbox hides, is a UserError here.
        work_dir(settings.work_dir, home)
        for attempt in range(START_ATTEMPTS):
            # Run files may carry secrets' values: in memory, not on disk, where possible.
            # A folder each start: a failed start's session took its own away with it.
            runs = await asyncio.to_thread(run_files.new_folder)
            try:
                return await self._open(
                    agent, number, runtime, settings, choice.sandbox, runs, policy, home
                )
            except BaseException as exc:
                if runs is not None:
                    shutil.rmtree(runs, ignore_errors=True)
                # A daemon's socket listed to be covered went away before bubblewrap
                # mounted over it (it cannot make the mount point in a read-only /):
                # listed again, the next start does not name it.
                said = str(exc.told.variables.get("output", "")) if isinstance(
                    exc, SessionError) else ""  # fmt: skip
                if not any(w in said for w in VANISHED) or attempt == START_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    async def _open(
        self,
        agent: int,
        number: int,
        runtime: Runtime,
        settings: Settings,
        sandbox: Sandbox,
        runs: Path | None,
        policy: Callable[[], OutboundPolicy],
        home: Path | None,
    ) -> tuple[TerminalSession, Launch]:
        marker, mark = Marker(secrets.token_hex(6)), secrets.token_hex(8)
        scratch = self.scratch / f"a{agent}-s{number}-{runtime}"
        scratch.mkdir(parents=True, exist_ok=True)
        confined = not isinstance(sandbox, NoSandbox)
        space = await asyncio.to_thread(scratch_space.create, mark) if confined else None
        room = self.room(settings, runs, space, home)
        try:
            how, env = _launch_in(runtime, settings, sandbox, room, marker, scratch)
            tree = await asyncio.to_thread(CgroupTree.create, mark, room.limits)
            tree = tree or AncestryTree(mark)
            try:
                start = sandbox.wrap(how.argv, {**env, **tree.env()}, room)
            except BaseException:  # the work folder could not be held: no session to end it
                tree.close()
                raise
            try:
                session = TerminalSession(
                    start.argv, room.work, env, scratch, marker, tree, runs, start.pass_fds,
                    settings.code_exec_stop_after,
                )  # fmt: skip
                try:
                    session.spawn()
                finally:
                    start.started()
                proxy = await self._way_out(session, start, policy)
            finally:
                start.close()
            _bound(session, proxy, space, settings.code_exec_scratch_mb)
            await session.ready()
        except BaseException:
            if space is not None:
                await asyncio.to_thread(scratch_space.remove, space)
            raise
        self._warn(session.start_text)
        return session, how

    @staticmethod
    async def _way_out(
        session: TerminalSession, start: Confined, policy: Callable[[], OutboundPolicy]
    ) -> CheckingProxy | None:
        """The proxy of the session's way out (None: no network); the session is killed
        when it cannot be had."""
        try:
            return await open_way_out(start, policy, session.notice)
        except NoWayOut as exc:
            await session.ready()  # raises with the sandbox's own words when it failed
            session.kill()
            raise SessionError("fw.code.no_way_out.md", reason=str(exc)) from None
        except BaseException:
            session.kill()
            raise

    def _warn(self, text: str) -> None:
        """Log what the sandbox's launcher warned of (once per text for this chat)."""
        for line in text.splitlines():
            if line.startswith(WARNING_PREFIX) and line not in self.warned:
                self.warned.add(line)
                log.warning("code session: %s", line.removeprefix(WARNING_PREFIX))

    def last(self, agent: int, number: int) -> TerminalSession | None:
        """The session last used under this number, if it is still there."""
        runtime = self._last.get((agent, number))
        return self._sessions.get((agent, number, runtime)) if runtime else None

    def reset(self, agent: int, number: int) -> int:
        """Kill every process of this session number; how many sessions were ended."""
        ended = 0
        for key in [k for k in self._sessions if k[:2] == (agent, number)]:
            self._sessions.pop(key).kill()
            ended += 1
        self._last.pop((agent, number), None)
        return ended

    def close_all(self) -> None:
        for session in self._sessions.values():
            session.kill()
        self._sessions.clear()
        self._last.clear()

    def __len__(self) -> int:
        return sum(1 for s in self._sessions.values() if s.alive)


def _close_soon(proxy: CheckingProxy) -> None:
    """Close a session's proxy from `kill`, which cannot wait: its connections are cut."""
    with contextlib.suppress(RuntimeError):  # no loop running: nothing left to close
        asyncio.get_running_loop().create_task(proxy.close())


def _launch_in(
    runtime: Runtime, settings: Settings, sandbox: Sandbox, room: Room, marker: Marker,
    scratch: Path,
) -> tuple[Launch, dict[str, str]]:  # fmt: skip
    """How to start `runtime` in `room`, and the environment it starts with."""
    env = session_env(settings.code_exec_env)
    if isinstance(sandbox, NoSandbox):
        how = launch(runtime, settings.code_exec_node, marker, scratch)
    else:
        # Cadre's own interpreter lives in its hidden folder (or a hidden home):
        # the sandbox runs the system's python3, which can make a venv in the work folder.
        def find(name: str) -> str | None:
            return find_program(name, env, sandbox, room)

        python = find("python3") or "python3"
        how = launch(runtime, settings.code_exec_node, marker, scratch, python, find)
    env.update(how.env)
    return how, env


def _bound(
    session: TerminalSession, proxy: CheckingProxy | None, space: Path | None, limit_mb: int
) -> None:
    """What goes with the session when it ends: its proxy, its scratch space (watched for
    its size meanwhile)."""
    if proxy is not None:
        session.on_end.append(lambda: _close_soon(proxy))
    if space is not None:
        watch = scratch_space.Watch(space, limit_mb, session.stop)
        session.on_end += [watch.stop, lambda: scratch_space.remove_soon(space)]
        watch.start()


def others_work(home: Path | None) -> tuple[Path, ...]:
    """The folders to hide from the sessions of a person whose space is `home`: the
    server's own work folder (the `work_dir` setting: the first admin's), when it is not
    theirs. Every space is inside usr/, hidden already; that folder may lie anywhere, and
    the whole system is shown read-only."""
    if home is None or home == usr_dir():
        return ()
    named = load_settings().work_dir.strip()
    return (Path(expanded(named)),) if named else ()
