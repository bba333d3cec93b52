"""Logged-in sessions, kept on the server so that logout and a password change end them.

The browser's signed session cookie carries a random session id. The server
keeps the live ones (hashed), each with a stamp of the credentials it was opened
with, and every request and every Socket.IO event checks both: a cookie copied
before a logout names an ended session, and after a password change (from
Settings, the environment or an edit of settings.json) no stamp made before
matches.

Where the records are kept is a book's business (cluster/sessions.py): a process
alone keeps them in memory and in usr/sessions.json (`FileBook`, so a restart
keeps them); the nodes of a cluster keep them in Redis (the node's book), so any
node serves any page of a login made on any node, and a session ended on one
node is ended on every node: each node closes its own sockets of it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path

from accounts.users import User
from cluster.sessions import MAX_AGE, MAX_SESSIONS, Ended, SessionBook, SessionRecord
from helpers.files import write_text_atomic

log = logging.getLogger(__name__)

#: What the store's listeners are told: the keys of the sessions that ended.
Listener = Ended
#: The keys of the sessions a listener holds something of (its sockets').
Watched = Callable[[], Collection[str]]


def credentials_stamp(user: User, key: bytes) -> str:
    """Changes whenever the user's name, role or (stored hash of the) password changes, or
    they are disabled (accounts/users.py `User.stamp`)."""
    return hmac.new(key, user.stamp().encode(), hashlib.sha256).hexdigest()[:32]


def session_key(sid: str) -> str:
    """How a session id is kept on the server and named to listeners (never the id itself)."""
    return hashlib.sha256(sid.encode()).hexdigest()


def _key(sid: object) -> str:
    return session_key(sid) if isinstance(sid, str) and sid else ""


class SessionStore:
    """The live sessions; listeners hear the keys of the ones that end, on any node."""

    def __init__(self, book: SessionBook) -> None:
        self.book = book
        self._listeners: list[tuple[Listener, Watched]] = []
        book.listen(self._tell, self._look_again)

    def on_end(self, listener: Listener, watched: Watched = tuple) -> None:
        """`listener` hears the keys of sessions that end; `watched` names the sessions it
        holds something of, looked at again when ends may have been missed."""
        self._listeners.append((listener, watched))

    def start(self, stamp: str, user: str = "") -> str:
        """A new session's id (for the signed cookie) of `user`, opened with credentials
        `stamp`."""
        sid = secrets.token_urlsafe(32)
        self._tell(self.book.add(session_key(sid), SessionRecord(time.time(), stamp, user)))
        return sid

    def alive(self, sid: object, stamp: str) -> bool:
        """Is `sid` a live session opened with the credentials that hold now?"""
        key = _key(sid)
        record = self.book.get(key) if key else None
        if record is None or time.time() - record.started >= MAX_AGE:
            return False
        return hmac.compare_digest(record.stamp, stamp)

    def end(self, sid: object) -> None:
        """End one session (logout)."""
        if key := _key(sid):
            self._end({key})

    def keep_only(self, sid: object, stamp: str, user: str) -> bool:
        """`user`'s credentials changed through session `sid`: end every other session of
        theirs, and keep this one under the new `stamp`. False if `sid` was no live session."""
        key = _key(sid)
        kept = bool(key) and self.book.restamp(key, stamp, user)
        self._end(self.book.keys_of({user, ""}) - {key})
        return kept

    def end_user(self, user: str) -> None:
        """End every session of `user` (disabled, deleted, or their password reset): their
        open pages are disconnected at once (the listeners hear it)."""
        self._end(self.book.keys_of({user}))

    def close(self) -> None:
        self.book.close()

    def _end(self, keys: set[str]) -> None:
        self._tell(self.book.remove(keys) if keys else set())

    def _tell(self, ended: set[str]) -> None:
        for listener, _ in self._listeners if ended else []:
            try:
                listener(ended)
            except Exception:  # one listener's failure must not keep a socket open
                log.exception("a listener of ended sessions failed")

    def _look_again(self) -> None:
        """Ends may have been missed (the node did not hear Redis for a while): each
        listener hears which of the sessions it holds something of are gone."""
        for listener, watched in self._listeners:
            try:
                gone = {key for key in watched() if self.book.get(key) is None}
                if gone:
                    listener(gone)
            except Exception:
                log.exception("looking again at the sessions of a listener failed")


class FileBook:
    """The sessions of a process alone: in memory, and in `path` (usr/sessions.json) so
    that a restart keeps them."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._live: dict[str, SessionRecord] = self._load()

    def _load(self) -> dict[str, SessionRecord]:
        if not self._path.exists():
            return {}
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
            return {str(k): SessionRecord(float(v[0]), str(v[1]), str(v[2]) if len(v) > 2
                                          else "") for k, v in data.items()}  # fmt: skip
        except (OSError, ValueError, AttributeError, TypeError, IndexError, KeyError) as exc:
            # Losing the list only means logging in again.
            log.error("sessions file %s is unreadable (%s): every session ended", self._path, exc)
            return {}

    def _save(self) -> None:
        data = {k: [r.started, r.stamp, r.user] for k, r in self._live.items()}
        write_text_atomic(self._path, json.dumps(data), mode=0o600)

    def add(self, key: str, record: SessionRecord) -> set[str]:
        with self._lock:
            now = record.started
            self._live = {k: r for k, r in self._live.items() if now - r.started < MAX_AGE}
            self._live[key] = record
            dropped = set()
            while len(self._live) > MAX_SESSIONS:
                oldest = min(self._live, key=lambda k: self._live[k].started)
                del self._live[oldest]
                dropped.add(oldest)
            self._save()
        return dropped

    def get(self, key: str) -> SessionRecord | None:
        return self._live.get(key)

    def restamp(self, key: str, stamp: str, user: str) -> bool:
        with self._lock:
            found = self._live.get(key)
            if found is None:
                return False
            self._live[key] = replace(found, stamp=stamp, user=user)
            self._save()
        return True

    def keys_of(self, users: Collection[str]) -> set[str]:
        with self._lock:
            return {k for k, r in self._live.items() if r.user in users}

    def remove(self, keys: Collection[str]) -> set[str]:
        with self._lock:
            ended = set(keys) & self._live.keys()
            for key in ended:
                del self._live[key]
            if ended:
                self._save()
        return ended

    def listen(self, ended: Ended, missed: Callable[[], None]) -> None:
        pass  # no other process keeps these sessions: every end is this one's

    def close(self) -> None:
        pass
