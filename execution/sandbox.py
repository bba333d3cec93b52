"""Where code sessions run: the seam between a session and what confines it.

A backend turns the command line that starts a session's program into one
that starts it confined (`wrap`), and says which host paths a confined program
can see (`sees`), so a session picks programs that exist in there. The backend
is chosen from the settings in execution/sandbox_choice.py: `none` (here) runs
commands as Cadre's user; `bubblewrap` (execution/sandbox_bwrap.py) runs them
in Linux namespaces. A container runtime (docker, podman) would be one more
backend there: the tools and sessions only ever see a `Sandbox`.

What every backend is given is a `Room`: the work folder (writable, where
commands start), the folders shown read-only, the folders hidden, the scratch
space, the network and the limits. What it gives back is a `Confined` start:
the command line, the descriptors the started process keeps, and, when its
commands have a network of their own, Cadre's end of the channel its way out
comes through (execution/way_out.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    """What a confined session may use; 0: no limit."""

    #: Processes at once (a fork loop stops there).
    processes: int = 0
    #: Memory in MB, where cgroups let Cadre set it (execution/cgroup_tree.py).
    memory_mb: int = 0


@dataclass(frozen=True)
class Room:
    """What a confined session may see and change."""

    #: Writable; commands start here. Its real path, as checked (no link on the way: one
    #: found there when the session starts is refused, never followed).
    work: Path
    #: Shown read-only (the chat's folder, the session drivers), even inside a hidden folder.
    readable: tuple[Path, ...] = ()
    #: Not shown at all (Cadre's own folder, its user data), except what is named above.
    hidden: tuple[Path, ...] = ()
    #: False: no network at all, not even this machine's loopback. True: a network of its
    #: own whose only way out is Cadre's checking proxy (`PROXY_PORT` on its loopback).
    network: bool = True
    #: The session's own scratch space on disk (execution/scratch.py): /tmp, /var/tmp and the
    #: home are its folders. None: empty folders in memory, gone with the session.
    scratch: Path | None = None
    limits: Limits = field(default_factory=Limits)


#: The port of the checking proxy on a sandbox's own loopback (the one proxies usually use).
PROXY_PORT = 3128
#: What tells the commands of a sandbox with a network where its way out is. Lower and upper
#: case: curl reads only the lower `http_proxy`, other programs only the upper; NO_PROXY
#: keeps a server the commands start themselves (on their own loopback) reached directly.
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"
PROXY_ENV = {
    **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), PROXY_URL),
    **dict.fromkeys(("http_proxy", "https_proxy", "all_proxy"), PROXY_URL),
    **dict.fromkeys(("NO_PROXY", "no_proxy"), "localhost,127.0.0.1,::1"),
}


@dataclass
class Confined:
    """How to start a program confined: what the backend's `wrap` gives."""

    argv: list[str]
    #: Descriptors the started process must keep (closed in Cadre once it started).
    pass_fds: tuple[int, ...] = ()
    #: Cadre's end of the channel the sandbox's listening socket comes through (None: its
    #: commands have no network of their own).
    channel: socket.socket | None = None

    def started(self) -> None:
        """The process started (or could not): Cadre's copies of its descriptors go."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    def close(self) -> None:
        """Nothing more will come through the channel."""
        self.started()
        if self.channel is not None:
            self.channel.close()
            self.channel = None


class Sandbox(Protocol):
    """One way to run a session's program confined (or not)."""

    #: The backend's name as the setting spells it.
    name: str

    def wrap(self, argv: list[str], env: dict[str, str], room: Room) -> Confined:
        """How to start `argv` with `env` confined to `room`."""
        ...

    def sees(self, path: Path, room: Room) -> bool:
        """Whether a program confined to `room` can reach host path `path`."""
        ...


class NoSandbox:
    """Commands run as Cadre's user, with everything that user may do."""

    name = "none"

    def wrap(self, argv: list[str], env: dict[str, str], room: Room) -> Confined:
        return Confined(argv)

    def sees(self, path: Path, room: Room) -> bool:
        return True


class SandboxUnavailable(RuntimeError):
    """The chosen backend cannot run on this machine; the text says why and what to do."""


def find_program(name: str, env: dict[str, str], sandbox: Sandbox, room: Room) -> str | None:
    """The first `name` on the session's PATH that the confined program can reach (`name`
    itself when it is a path, if the program can reach that)."""
    if os.sep in name:
        found = shutil.which(name)
        return found if found is not None and sandbox.sees(Path(found), room) else None
    for folder in env.get("PATH", "").split(":"):
        if folder and sandbox.sees(Path(folder), room):
            found = shutil.which(name, path=folder)
            if found is not None:
                return found
    return None
