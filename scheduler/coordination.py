"""What the scheduler asks of the other processes it shares usr/ with: the seam to the cluster.

In cluster mode several Cadre processes (nodes) share one usr/ folder, so one tasks.json
and one set of due tasks. The scheduler then fires a due run only where it was claimed
(`claim`: the first asker in the cluster gets it), the task list changes only under the
cluster's lock `tasks` (`shared_lock`), and a run marked going on that is not this
process's is recorded as cut short only when no other live process may have it going
(`another_alive_since`). The server gives this process's node
(cluster/node.py answers both); the scheduler never imports cluster/, which sits beside it.

Either may raise `helpers.errors.Unavailable` (Redis does not answer): the caller decides
what waits. `Solo`, the default, is a process alone: every claim is granted.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class Coordination(Protocol):
    """How the processes sharing usr/ agree on who does what (cluster/node.py `Node`)."""

    def claim(self, key: str, ttl: float) -> bool:
        """True for the first asker of `key` within `ttl` seconds, among all processes."""
        ...

    def shared_lock(self, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        """Held by one holder at a time among all processes while the block runs."""
        ...

    def another_alive_since(self, moment: float) -> bool:
        """Whether another process, alive now, started at or before `moment` (Unix time):
        a run marked going on since then may be its, and go on."""
        ...


class Solo:
    """One process, nothing to agree with: each claim is granted, a lock is no lock (the
    store's own lock keeps this process's threads apart), and no other process lives."""

    def claim(self, key: str, ttl: float) -> bool:
        return True

    def shared_lock(self, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        return nullcontext()

    def another_alive_since(self, moment: float) -> bool:
        return False
