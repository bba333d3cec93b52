"""Logged-in sessions, kept on the server so that logout and a password change end them.

The browser's signed session cookie carries a random session id. The server
keeps the live ones (hashed, in usr/sessions.json, so a restart keeps them),
each with a stamp of the credentials it was opened with, and every request
and every Socket.IO event checks both: a cookie copied before a logout names
an ended session, and after a password change (from Settings, the
environment or an edit of settings.json) no stamp made before matches.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accounts.users import User
from helpers.files import write_text_atomic

log = logging.getLogger(__name__)

#: A session ends this long after its login at the latest.
MAX_AGE = 30 * 24 * 3600.0
#: Sessions kept at most (the oldest end first).
MAX_SESSIONS = 100

Listener = Callable[[set[str]], None]


def credentials_stamp(user: User, key: bytes) -> str:
    """Changes whenever the user's name, role or (stored hash of the) password changes, or
    they are disabled (accounts/users.py `User.stamp`)."""
    return hmac.new(key, user.stamp().encode(), hashlib.sha256).hexdigest()[:32]


def session_key(sid: str) -> str:
    """How a session id is kept on the server and named to listeners (never the id itself)."""
    return hashlib.sha256(sid.encode()).hexdigest()


@dataclass
class Record:
    started: float
    stamp: str
    #: Whose session it is ("" in a file from before accounts: the first admin's login).
    user: str = ""


class SessionStore:
    """The live sessions; listeners hear the keys of the ones that end."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._live: dict[str, Record] = self._load()

    def _load(self) -> dict[str, Record]:
        if not self._path.exists():
            return {}
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
            return {str(k): Record(float(v[0]), str(v[1]), str(v[2]) if len(v) > 2 else "")
                    for k, v in data.items()}  # fmt: skip
        except (OSError, ValueError, AttributeError, TypeError, IndexError, KeyError) as exc:
            # Losing the list only means logging in again.
            log.error("sessions file %s is unreadable (%s): every session ended", self._path, exc)
            return {}

    def _save(self) -> None:
        data = {k: [r.started, r.stamp, r.user] for k, r in self._live.items()}
        write_text_atomic(self._path, json.dumps(data), mode=0o600)

    def on_end(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self, stamp: str, user: str = "") -> str:
        """A new session's id (for the signed cookie) of `user`, opened with credentials
        `stamp`."""
        sid = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            self._live = {k: r for k, r in self._live.items() if now - r.started < MAX_AGE}
            self._live[session_key(sid)] = Record(now, stamp, user)
            while len(self._live) > MAX_SESSIONS:
                del self._live[min(self._live, key=lambda k: self._live[k].started)]
            self._save()
        return sid

    def alive(self, sid: object, stamp: str) -> bool:
        """Is `sid` a live session opened with the credentials that hold now?"""
        if not isinstance(sid, str) or not sid:
            return False
        record = self._live.get(session_key(sid))
        if record is None or time.time() - record.started >= MAX_AGE:
            return False
        return hmac.compare_digest(record.stamp, stamp)

    def end(self, sid: object) -> None:
        """End one session (logout)."""
        if isinstance(sid, str) and sid:
            self._end({session_key(sid)})

    def keep_only(self, sid: object, stamp: str, user: str) -> bool:
        """`user`'s credentials changed through session `sid`: end every other session of
        theirs, and keep this one under the new `stamp`. False if `sid` was no live session."""
        key = session_key(sid) if isinstance(sid, str) and sid else ""
        with self._lock:
            kept = self._live.get(key)
            if kept is not None:
                kept.stamp, kept.user = stamp, user
                self._save()
            theirs = {k for k, r in self._live.items() if r.user in (user, "")}
        self._end(theirs - {key})
        return kept is not None

    def end_user(self, user: str) -> None:
        """End every session of `user` (disabled, deleted, or their password reset): their
        open pages are disconnected at once (the listeners hear it)."""
        with self._lock:
            theirs = {k for k, r in self._live.items() if r.user == user}
        self._end(theirs)

    def _end(self, keys: set[str]) -> None:
        with self._lock:
            ended = keys & self._live.keys()
            for key in ended:
                del self._live[key]
            if ended:
                self._save()
        for listener in self._listeners if ended else []:
            listener(ended)
