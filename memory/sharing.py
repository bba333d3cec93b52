"""Memory's databases when several nodes of a cluster share `usr/` (docs/scaling.md).

SQLite keeps one process's writers apart with file locks, and in WAL mode with an index
in shared memory: neither is to be trusted between machines on a network file system.
So in a cluster every use of a memory database (its connection opened, used and closed)
is held under a lock the nodes share (`cadre:lock:memory:<file>`, the server's node gives
it: `share_between_nodes`), and the database keeps a rollback journal instead of WAL, so
that all it is lives in its one file, which the next holder opens afresh. A process alone
gives no lock and keeps WAL: nothing changes for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from helpers.files import usr_dir

#: A lock the nodes share, by name, held while the block runs (the node's `shared_lock`).
SharedLock = Callable[[str], AbstractContextManager[None]]

_shared: SharedLock | None = None
#: This thread holds a database's lock already (a use inside a use takes it once).
_holding = threading.local()


def share_between_nodes(lock: SharedLock | None) -> None:
    """From now on, hold each memory database under `lock` (None: a process alone)."""
    global _shared
    _shared = lock


def shared() -> bool:
    return _shared is not None


def journal_mode() -> str:
    """WAL for a process alone; a rollback journal when nodes share the files."""
    return "DELETE" if _shared is not None else "WAL"


def lock_name(path: Path) -> str:
    """The database's name among the nodes: its place under usr/, which every node mounts
    wherever it likes."""
    try:
        where = path.resolve().relative_to(usr_dir().resolve())
    except ValueError:
        where = path
    return f"memory:{where.as_posix()}"


@contextmanager
def held(path: Path) -> Iterator[None]:
    """The database at `path`, held against the other nodes while the block runs."""
    lock = _shared
    names: set[str] = getattr(_holding, "names", set())
    name = lock_name(path)
    if lock is None or name in names:
        yield
        return
    with lock(name):
        _holding.names = names | {name}
        try:
            yield
        finally:
            _holding.names = names
