"""Where code sessions run: the seam between a session and what confines it.

A backend turns the command line that starts a session's program into one
that starts it confined (`wrap`), and says which host paths a confined program
can see (`sees`), so a session picks programs that exist in there. The backend
is chosen from the settings in execution/sandbox_choice.py: `none` (here) runs
commands as Cadre's user; `bubblewrap` (execution/sandbox_bwrap.py) runs them
in Linux namespaces. A container runtime (docker, podman) would be one more
backend there: the tools and sessions only ever see a `Sandbox`.

What every backend is given is a `Room`: the work folder (writable, where
commands start), the folders shown read-only, the folders hidden, the network.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Room:
    """What a confined session may see and change."""

    #: Writable; commands start here.
    work: Path
    #: Shown read-only (the chat's folder, the session drivers), even inside a hidden folder.
    readable: tuple[Path, ...] = ()
    #: Not shown at all (Cadre's own folder, its user data), except what is named above.
    hidden: tuple[Path, ...] = ()
    #: False: no network at all, not even this machine's loopback.
    network: bool = True


class Sandbox(Protocol):
    """One way to run a session's program confined (or not)."""

    #: The backend's name as the setting spells it.
    name: str

    def wrap(self, argv: list[str], env: dict[str, str], room: Room) -> list[str]:
        """The command line that starts `argv` with `env` confined to `room`."""
        ...

    def sees(self, path: Path, room: Room) -> bool:
        """Whether a program confined to `room` can reach host path `path`."""
        ...


class NoSandbox:
    """Commands run as Cadre's user, with everything that user may do."""

    name = "none"

    def wrap(self, argv: list[str], env: dict[str, str], room: Room) -> list[str]:
        return argv

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
