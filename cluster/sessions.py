"""Where login sessions are kept: the record of one, and the face of the book that keeps them.

The server's session store (server/security/sessions.py) decides what a session is worth
(its age, the credentials it was opened with); a book only keeps the records, by key (the
hash of a session's id: never the id itself). A process alone keeps them in memory and in
usr/sessions.json; the nodes of a cluster keep them in Redis (cluster/redis_sessions.py),
so that a login made on any node is known to every node, and one ended on any node is
ended on every node at once. This module imports no redis-py: the server names these
types whether or not it runs in a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

#: A session ends this long after its login at the latest.
MAX_AGE = 30 * 24 * 3600.0
#: Sessions kept at most (of everyone alone; of each person in a cluster): the oldest end
#: first.
MAX_SESSIONS = 100

#: Told the keys of sessions that ended.
Ended = Callable[[set[str]], None]


@dataclass(frozen=True)
class SessionRecord:
    #: When its login was (Unix time).
    started: float
    #: The stamp of the credentials it was opened with (server/security/sessions.py).
    stamp: str
    #: Whose session it is ("" in a file from before accounts: the first admin's login).
    user: str = ""


class SessionBook(Protocol):
    """The live sessions' records by key. Every method may raise `ClusterUnavailable` (a
    cluster's Redis does not answer): nothing was changed."""

    def add(self, key: str, record: SessionRecord) -> set[str]:
        """Keep a new session; the keys of sessions dropped to keep the book bounded
        (MAX_SESSIONS: ended, the oldest first)."""
        ...

    def get(self, key: str) -> SessionRecord | None:
        """The session's record; None when it ended (or expired: MAX_AGE)."""
        ...

    def restamp(self, key: str, stamp: str, user: str) -> bool:
        """The session is `user`'s now, under credentials `stamp`; False when it ended."""
        ...

    def keys_of(self, users: Collection[str]) -> set[str]:
        """The keys of the live sessions of `users`."""
        ...

    def remove(self, keys: Collection[str]) -> set[str]:
        """End these sessions; the keys of those that were live (told to other processes:
        `listen`)."""
        ...

    def listen(self, ended: Ended, missed: Callable[[], None]) -> None:
        """Tell `ended` the keys of sessions other processes end (a cluster's nodes: their
        pages' sockets here must close), and call `missed` when such news may have been
        missed (this process could not hear them for a while): the asker then checks what
        it holds (`get`). A book of one process alone hears nothing."""
        ...

    def close(self) -> None:
        """Stop listening (the server stops)."""
        ...
