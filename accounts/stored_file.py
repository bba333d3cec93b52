"""What the accounts' files (users.json, api_keys.json, invites.json) share: knowing that a
file changed without reading it, and changing it under a lock that other processes honour
too.

A file is read again only when its stamp (path, inode, modification time, size) differs from
the one it was read at: a login or an API call asks on every request, and a `stat` is all
that costs. A change takes the file's lock (`<name>.lock` beside it, `flock`ed: a second
process on this machine changing it meanwhile waits), reads it fresh and writes it whole.
In a cluster (`shared`, the node: helpers/shared_files.py) it takes the cluster's lock of
the file first, so that a node on another machine, whose `flock` may not reach this one
over a shared file system, waits too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from helpers.shared_files import SharedLocks

try:
    import fcntl
except ImportError:  # Windows: one process per usr/ folder there
    fcntl = None  # type: ignore[assignment]

#: (path, inode, mtime in ns, size): the inode tells apart two writes within one tick of
#: the file system's clock that leave the file the same size (a password's new hash).
Stamp = tuple[str, int, int, int]
#: A stamp no file has: what was read before anything was.
NEVER: Stamp = ("", 0, 0, -1)


def stamp_of(path: Path) -> Stamp:
    """The file's path, inode, modification time and size ((path, 0, 0, 0) when there is
    none)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return (str(path), 0, 0, 0)
    return (str(path), info.st_ino, info.st_mtime_ns, info.st_size)


@contextlib.contextmanager
def locked(path: Path, shared: SharedLocks | None = None) -> Iterator[None]:
    """Hold `path`'s lock (its folder made if need be) for a change of it; with `shared`,
    the cluster's lock named after the file too (`helpers.errors.Unavailable` when it is
    not got: nothing changed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cluster = shared.shared_lock(path.stem) if shared is not None else contextlib.nullcontext()
    with cluster, open(path.with_name(path.name + ".lock"), "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield
