"""What of the host a sandbox's mounts are made of, read when a session starts.

The sockets bubblewrap covers (execution/sandbox_bwrap.py: a read-only mount does
not stop a connection to a socket), the links of a hidden folder that are made
again inside, and the work folder held by a descriptor from its check on, so
that the folder mounted is the folder checked.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from execution.terminal import SessionError


def held_folder(folder: Path) -> int:
    """A descriptor of the work folder as it is now, at its checked real path, which the
    launcher mounts (bubblewrap's `--bind-fd`, or its idmapped clone) instead of looking the
    path up again: a command of another chat whose work folder holds this one could swap it
    for a link in between (won 2 times in 150 starts in a probe), and the session would get
    the link's target (/etc) writable, as its own."""
    changed = SessionError("fw.code.work_folder_changed.md", folder=folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)  # usr/workdir is made at its first use
        fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if folder.is_symlink():
            raise changed from None
        raise SessionError(
            "fw.code.work_folder_unopened.md", folder=folder, error=exc.strerror
        ) from None
    if os.readlink(f"/proc/self/fd/{fd}") != str(folder):  # a link on the way, since the check
        os.close(fd)
        raise changed
    return fd


def daemon_sockets() -> list[Path]:
    """Every named socket bound on this machine's network, outside /run too (LXD's and
    Incus' root-granting ones are under /var), by their real paths."""
    return list(dict.fromkeys(bound_sockets()))


def links(folder: Path) -> list[tuple[str, str]]:
    """The links directly in `folder`: (name, where each points)."""
    try:
        return [(e.name, os.readlink(e.path)) for e in os.scandir(folder) if e.is_symlink()]
    except OSError:
        return []


def bound_sockets() -> list[Path]:
    """The named unix sockets bound in Cadre's network namespace (listed in /proc/net/unix,
    listening or not) that are sockets at those paths here."""
    try:
        lines = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        return []
    found: list[Path] = []
    for line in lines:
        fields = line.split(None, 7)  # the path, the eighth field, may hold spaces
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed, or abstract (`@`: cut with the network, which is its own)
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(fields[7]).st_mode):
                found.append(_real(Path(fields[7])))
    return found


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))
