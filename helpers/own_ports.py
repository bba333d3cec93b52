"""The TCP ports Cadre listens on, its own and every other Cadre's of this user on this
machine: ports no agent may reach.

The outbound policy refuses these on every address of this machine
(helpers/outbound.py): an agent's browser or command that reached a Cadre's web
server could use its API, where no login is set, as a person would, and have
the host run what it likes. Every listener Cadre opens on this machine's
network says so here when it starts listening and when it stops: the web
server and its MCP endpoint (run_ui.py), the local model's server
(models/local_model.py), the browsers' checking proxies
(helpers/checking_proxy.py). A sandbox's own proxy listens in the sandbox's
network, not this machine's, and is not one of them.

Another Cadre of the same user (a second one started on another port, with
another `usr/`) is as much a way out: so each port is also written down as a
file in a folder of this user's (`shared_folder`), named by the port and
holding the pid and start time of the process that listens, and what every
Cadre refuses is its own ports and the ports of those files whose process still
runs (a file left by a Cadre that was killed is removed when read). Cadres of
other users are not seen: theirs is another user's server, reachable by any
program of this machine anyway.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

#: Seconds the other Cadres' ports, once read, are trusted before the folder is read again.
FRESH_FOR = 1.0

_lock = threading.Lock()
_ports: dict[int, int] = {}  # port -> how many listeners hold it (a model kept while retired)
_others: tuple[float, frozenset[int]] = (-FRESH_FOR, frozenset())


def add(port: int) -> None:
    """A listener of Cadre's is on `port`."""
    with _lock:
        _ports[port] = _ports.get(port, 0) + 1
    _write_down(port)


def remove(port: int) -> None:
    """One listener of Cadre's on `port` closed."""
    with _lock:
        left = _ports.get(port, 0) - 1
        if left > 0:
            _ports[port] = left
            return
        _ports.pop(port, None)
    folder = shared_folder()
    if folder is not None:
        with contextlib.suppress(OSError):
            if _holder(folder / str(port)) == _me():
                (folder / str(port)).unlink()


def listening() -> frozenset[int]:
    """The ports a Cadre of this user listens on now: this one's and the others'."""
    global _others
    now = time.monotonic()
    with _lock:
        own = frozenset(_ports)
        taken, others = _others
        if now - taken < FRESH_FOR:
            return own | others
    others = _read_others()
    with _lock:
        _others = (now, others)
    return own | others


def shared_folder() -> Path | None:
    """This user's folder of Cadres' ports (made, owner-only): under XDG_RUNTIME_DIR where
    the session has one, else in the system's temporary folder; None where neither can be
    had safely (a folder there of another owner, or one that is a link)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"cadre-{os.getuid()}-ports"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    # In /tmp anyone may have made it first: only a real folder of this user's, closed to
    # others, is trusted (else another user could hide a Cadre's port from the list).
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        log.warning("%s is not a private folder of this user's: other Cadres' ports are not"
                    " shared", folder)  # fmt: skip
        return None
    return folder


def _me() -> str:
    return f"{os.getpid()} {_start_time(os.getpid())}"


def _write_down(port: int) -> None:
    folder = shared_folder()
    if folder is None:
        return
    partial = folder / f".{port}.{os.getpid()}"
    try:
        partial.write_text(_me())
        os.replace(partial, folder / str(port))
    except OSError as exc:
        log.warning("cannot note port %d as Cadre's in %s: %s", port, folder, exc)


def _read_others() -> frozenset[int]:
    folder = shared_folder()
    if folder is None:
        return frozenset()
    found = set()
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if not entry.name.isdigit():
                continue
            holder = _holder(entry)
            if holder is not None and _alive(holder):
                found.add(int(entry.name))
            elif holder is not None:  # its Cadre is gone (killed): nobody else will say so
                with contextlib.suppress(OSError):
                    entry.unlink()
    return frozenset(found)


def _holder(entry: Path) -> str | None:
    try:
        return entry.read_text()[:64]
    except OSError:
        return None


def _alive(holder: str) -> bool:
    pid, _, start = holder.partition(" ")
    return pid.isdigit() and _start_time(int(pid)) == start


def _start_time(pid: int) -> str:
    """When process `pid` started (clock ticks after boot, as text), "" when it is gone or
    a zombie (killed, not yet reaped by its parent: it keeps its pid and start time, and
    listens on nothing)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return ""
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else ""
