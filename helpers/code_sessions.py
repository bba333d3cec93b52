"""The code sessions of one chat: a terminal, Python or Node.js process per agent and number.

Each agent has its own numbered sessions (a subordinate's `cd` does not move
its superior), and each number can hold one process per runtime. `output`
and `input` go to the runtime last used under that number. Sessions live
on the agents' event loop and are closed with their chat.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from helpers.files import base_path
from helpers.settings import ENV_PREFIX
from helpers.terminal import SessionError, TerminalSession
from helpers.terminal_output import Marker

Runtime = Literal["terminal", "python", "nodejs"]
DRIVERS = base_path("helpers", "terminal_drivers")


@dataclass(frozen=True)
class Launch:
    """How to start a runtime and how to make it run a file of code."""

    argv: list[str]
    suffix: str
    #: The line typed into the session to run a file (the shell sources it).
    command: str


def launch(runtime: Runtime, node: str, marker: Marker, scratch: Path) -> Launch:
    """How to start `runtime`; SessionError when its program is missing."""
    if runtime == "terminal":
        shell = shutil.which("bash")
        if shell is None:
            raise SessionError("the terminal runtime needs bash, which is not on PATH")
        # The prompt is the readiness marker with the exit code; set in an rc file,
        # not the environment, so a shell started by a command does not inherit it.
        rcfile = scratch / "bashrc"
        rcfile.write_text(f"PS1='{marker.prompt}'\nPS2=''\nunset PROMPT_COMMAND\n")
        argv = [shell, "--noprofile", "--rcfile", str(rcfile), "--noediting", "-i"]
        return Launch(argv, ".sh", ". '{path}'")
    if runtime == "python":
        return Launch([sys.executable, "-u", str(DRIVERS / "python_repl.py")], ".py", "{path}")
    found = shutil.which(node)
    if found is None:
        raise SessionError(
            f"the nodejs runtime needs Node.js, and {node!r} is not installed or not on PATH"
            " (setting code_exec_node names the program); use the terminal or python runtime"
        )
    return Launch([found, str(DRIVERS / "node_repl.js")], ".js", "{path}")


def session_env(marker: Marker) -> dict[str, str]:
    """The environment of a session: Cadre's own settings (keys!) left out, quiet pagers.

    The REPL drivers take their marker's token from it (and remove it at once).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env.update(
        TERM="dumb", PAGER="cat", GIT_PAGER="cat", HISTFILE="/dev/null", NO_COLOR="1",
        PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8", CADRE_READY_TOKEN=marker.token,
    )  # fmt: skip
    return env


class CodeSessions:
    """One chat's running sessions, keyed by (agent number, session number, runtime)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._sessions: dict[tuple[int, int, Runtime], TerminalSession] = {}
        self._launches: dict[tuple[int, int, Runtime], Launch] = {}
        self._last: dict[tuple[int, int], Runtime] = {}

    async def get(
        self, agent: int, number: int, runtime: Runtime, cwd: Path, node: str
    ) -> tuple[TerminalSession, Launch, bool]:
        """The live session for these keys, started when missing; True when new."""
        key = (agent, number, runtime)
        self._last[(agent, number)] = runtime
        session = self._sessions.get(key)
        if session is not None and session.alive:
            return session, self._launches[key], False
        if session is not None:
            session.kill()
        marker = Marker(secrets.token_hex(6))
        scratch = self.scratch / f"a{agent}-s{number}-{runtime}"
        scratch.mkdir(parents=True, exist_ok=True)
        how = launch(runtime, node, marker, scratch)
        session = TerminalSession(how.argv, cwd, session_env(marker), scratch, marker)
        try:
            await session.start()
        except BaseException:
            self._last.pop((agent, number), None)
            raise
        self._sessions[key], self._launches[key] = session, how
        return session, how, True

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
