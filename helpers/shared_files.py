"""Files of usr/ that several processes write: what a store asks of the others, and how it
tells that another one changed a file.

In cluster mode several Cadre processes (nodes) share one usr/ folder. A store that writes
a file whole (users.json, api_keys.json, invites.json, usage.json, each person's
notifications.json) then changes it as a read-modify-write under a lock every process
honours (`SharedLocks.shared_lock`: the node's, cluster/node.py, in Redis), and reads it
again when its `Stamp` differs from the one it last read or wrote. The server gives each
store its node; the stores never import cluster/, which sits above helpers/.

A process alone gives None instead: no lock beyond its own, and a store that never looks
at the file between its own changes, as before clusters (what each store did alone stays).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

#: What tells one version of a file from another: (inode, modification time in ns, size).
#: Each write replaces the file by a new one made beside it (helpers/files.py
#: `write_text_atomic`), so each write gives a new inode, even within one tick of the
#: file system's clock and at the same size.
Stamp = tuple[int, int, int]


class SharedLocks(Protocol):
    """The other processes sharing usr/, as a store asks them (cluster/node.py `Node`)."""

    def shared_lock(self, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        """Held by one holder at a time among all processes while the block runs, for at
        most `timeout` seconds; `helpers.errors.Unavailable` when it is not got (Redis
        does not answer): nothing was changed, and the caller decides what waits."""
        ...


def stamp_of(stat: os.stat_result) -> Stamp:
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def stamp_at(path: Path) -> Stamp | None:
    """The stamp of the file at `path` now (None: there is none)."""
    try:
        return stamp_of(path.stat())
    except FileNotFoundError:
        return None
