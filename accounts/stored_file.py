"""What the accounts' files (users.json, api_keys.json) share: knowing that a file changed
without reading it, and changing it under a lock that other processes honour too.

A file is read again only when its stamp (path, modification time, size) differs from the
one it was read at: a login or an API call asks on every request, and a `stat` is all that
costs. A change takes the file's lock (`<name>.lock` beside it, `flock`ed: the command line
or a second process changing it meanwhile waits), reads it fresh and writes it whole.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: one process per usr/ folder there
    fcntl = None  # type: ignore[assignment]

Stamp = tuple[str, int, int]
#: A stamp no file has: what was read before anything was.
NEVER: Stamp = ("", 0, -1)


def stamp_of(path: Path) -> Stamp:
    """The file's path, modification time and size ((path, 0, 0) when there is none)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return (str(path), 0, 0)
    return (str(path), info.st_mtime_ns, info.st_size)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold `path`'s lock (its folder made if need be) for a change of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield
