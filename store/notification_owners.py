"""Each person's notification history: a file in their space (accounts/spaces.py).

An entry is its owner's: the owner of the chat (or the task's chat) it is about, the
first admin for a chat from before accounts; Cadre's own news about no chat (no owner)
is every admin's. A page lists, marks and clears only its user's history, and each
change is heard as (owner, change), so the pusher sends it to that owner's pages alone.
In the desktop mode (no account) there is one history, usr/notifications.json, heard by
every page, as before accounts.

Why a file in each space and not one file with owners: a history is bounded (the newest
`KEPT` entries), and one bound for everyone would let one busy person's runs push
another's entries out; the first admin's file stays usr/notifications.json (the desktop
mode's), so an upgrade moves nothing; a leaving user's entries leave with their folder
(deleted, or handed over); and a page reads a file of its user's alone, with no filter
to forget. Histories are opened on first use and kept open (their writer thread ends
when idle). In a cluster (`shared`, the node), each history reads and writes its file as
one of several processes (store/notifications.py), under the cluster's lock
`notifications:<its file under usr/>`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from accounts.spaces import space_of
from accounts.users import Users
from helpers.files import usr_dir
from helpers.shared_files import SharedLocks
from store.notifications import KEPT, Change, Kind, Notification, NotificationHistory

log = logging.getLogger(__name__)

#: The history's file in each space.
FILE = "notifications.json"

#: Hears every change of every history: (whose, what); whose is None only in the desktop
#: mode (every page).
OwnerListener = Callable[[str | None, Change], None]


def _lock_name(path: Path) -> str:
    """The cluster's lock of a history's file: named after where it is under usr/."""
    try:
        where = path.relative_to(usr_dir()).as_posix()
    except ValueError:  # not under usr/ (never so today): its whole path
        where = path.as_posix()
    return f"notifications:{where}"


class Notifications:
    """The notification histories of one server, one per person (thread-safe)."""

    def __init__(self, users: Users | None = None, kept: int = KEPT,
                 shared: SharedLocks | None = None) -> None:  # fmt: skip
        #: usr/users.json wherever usr/ is (read again only when it changed).
        self.users = users or Users()
        self.kept = kept
        #: The other processes writing the histories (a cluster's node); None: this alone.
        self.shared = shared
        self._lock = threading.Lock()
        #: By file: the first admin's and the desktop mode's are one file, usr/'s.
        self._books: dict[Path, NotificationHistory] = {}
        #: File → whose pages hear its changes (usr/'s: the desktop mode's None, or the
        #: first admin once accounts exist).
        self._whose: dict[Path, str | None] = {}
        self._listeners: list[OwnerListener] = []

    # -- one person's history ------------------------------------------------------

    def of(self, owner: str | None) -> NotificationHistory:
        """The history of `owner` (None: the desktop mode's, usr/notifications.json; once
        accounts exist, that file is the first admin's, and so are its changes)."""
        if owner is None:
            first = self.users.first_admin()
            owner = first.name if first is not None else None
        path = space_of(owner) / FILE
        with self._lock:
            self._whose[path] = owner
            book = self._books.get(path)
            if book is None:
                book = NotificationHistory(path, self.kept, self.shared, _lock_name(path))
                book.subscribe(lambda change, path=path: self._tell(path, change))
                self._books[path] = book
        return book

    def items(self, owner: str | None = None) -> list[Notification]:
        """`owner`'s entries, newest first."""
        return self.of(owner).items()

    def add(
        self,
        owner: str | None,
        title: str,
        message: str = "",
        *,
        kind: Kind = "notify",
        type: str = "info",  # noqa: A002 - the notify item's own name for it
        chat_id: str | None = None,
        task: str | None = None,
    ) -> list[Notification]:
        """Keep a new entry in `owner`'s history (None: Cadre's own news, every admin's);
        the entries made. One for a user who has left (a late run's end) is dropped: their
        folder went with them."""
        kept = []
        for who in self._recipients(owner):
            kept.append(self.of(who).add(title, message, kind=kind, type=type,
                                         chat_id=chat_id, task=task))  # fmt: skip
        return kept

    def _recipients(self, owner: str | None) -> list[str | None]:
        if not self.users.any():
            return [None]  # the desktop mode: one history, every page
        if owner is None:
            return [admin.name for admin in self.users.admins()]
        if self.users.get(owner) is None:
            log.info("a notification for %r, who has no account any more, was dropped", owner)
            return []
        return [owner]

    def forget(self, owner: str) -> None:
        """`owner` leaves: their history is written and closed (their folder is moved or
        deleted next); a new account of that name starts with a history of its own."""
        path = space_of(owner) / FILE
        with self._lock:
            book = self._books.pop(path, None)
            self._whose.pop(path, None)
        if book is not None:
            book.close()

    # -- listeners and the files -----------------------------------------------------

    def subscribe(self, listener: OwnerListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _tell(self, path: Path, change: Change) -> None:
        with self._lock:
            whose = self._whose.get(path)
        for listener in list(self._listeners):
            try:
                listener(whose, change)
            except Exception:  # a listener's failure must not cost the others their news
                log.exception("a notification listener failed")

    def _open(self) -> list[NotificationHistory]:
        with self._lock:
            return list(self._books.values())

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every change so far is on disk (shutdown, tests)."""
        for book in self._open():
            book.flush(timeout)

    def close(self) -> None:
        """Write what is pending and stop every history's writer."""
        for book in self._open():
            book.close()
