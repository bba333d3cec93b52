"""One-time invite links: an admin adds a member without choosing their password.

The account exists from the start (its name is taken, it shows in the list as invited)
with no password, so nobody can log in to it; the link's token, shown once, lets its
holder set the password, once, before it expires. Kept in usr/invites.json as the
token's SHA-256 (a token has 192 random bits), the account's name and the expiry. The file
is read at each use, and changed under its lock (accounts/stored_file.py: in a cluster,
the cluster's too), so an invite made on one node is taken once, on any node.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from accounts.stored_file import locked
from helpers.files import usr_path, write_text_atomic
from helpers.shared_files import SharedLocks

log = logging.getLogger(__name__)

FILE = "invites.json"
#: How long an invite link works.
LIFETIME = 7 * 24 * 3600.0


@dataclass(frozen=True)
class Invite:
    digest: str
    name: str
    expires: float


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Invites:
    """The invites not used yet (read from and written to usr/invites.json)."""

    def __init__(self, path: Path | None = None, shared: SharedLocks | None = None) -> None:
        self._fixed = path
        #: The other processes changing the file (a cluster's node); None: this machine's.
        self._shared = shared
        self._lock = threading.Lock()

    @property
    def _path(self) -> Path:
        return self._fixed or usr_path(FILE)

    def _read(self) -> list[Invite]:
        try:
            rows = json.loads(self._path.read_text("utf-8"))["invites"]
            return [Invite(**row) for row in rows]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("the invites file %s is unreadable (%s): make the invites again",
                      self._path, exc)  # fmt: skip
            return []

    def _write(self, invites: list[Invite]) -> None:
        now = time.time()
        rows = [asdict(i) for i in invites if i.expires > now]
        write_text_atomic(self._path, json.dumps({"invites": rows}), mode=0o600)

    def make(self, name: str) -> tuple[str, float]:
        """A token for account `name` (any earlier one of theirs ends) and when it expires."""
        token = secrets.token_urlsafe(24)
        expires = time.time() + LIFETIME
        with self._lock, locked(self._path, self._shared):
            kept = [i for i in self._read() if i.name != name]
            self._write([*kept, Invite(_digest(token), name, expires)])
        return token, expires

    def peek(self, token: str) -> str | None:
        """The account an unexpired `token` is for, or None."""
        digest, now = _digest(token), time.time()
        found = None
        for invite in self._read():
            if hmac.compare_digest(invite.digest, digest) and invite.expires > now:
                found = invite.name
        return found

    def take(self, token: str) -> str | None:
        """Use `token` up: the account it was for, or None (unknown, used or expired)."""
        with self._lock, locked(self._path, self._shared):
            name = self.peek(token)
            if name is not None:
                self._write([i for i in self._read() if i.name != name])
            return name

    def drop(self, name: str) -> None:
        """The account was deleted (or given a password): its invite ends."""
        with self._lock, locked(self._path, self._shared):
            invites = self._read()
            if any(i.name == name for i in invites):
                self._write([i for i in invites if i.name != name])

    def pending(self) -> set[str]:
        now = time.time()
        return {i.name for i in self._read() if i.expires > now}
