"""Every user's API keys: made and revoked by their owner (or an admin), each acting as
its owner on every API (`/api/v1`, `/api_message`, `/v1`, `/mcp`).

Kept in usr/api_keys.json (owner-only): an id to name the key by, its owner, a label,
when it was made, and the SHA-256 of the key; the key itself is shown once, when it
is made. A key has 192 random bits, so a fast hash is enough: nobody can guess back
from it, and checking one costs microseconds on every API call. The `api_key`
setting (env `CADRE_API_KEY`) stays the first admin's key. The file is changed and read
again as users.json is (accounts/stored_file.py): in a cluster, a key made on one node
works on every node at once, and a key revoked on one stops on every node at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from accounts.stored_file import NEVER, Stamp, locked, stamp_of
from helpers.errors import UserError
from helpers.files import usr_path, write_text_atomic
from helpers.shared_files import SharedLocks

log = logging.getLogger(__name__)

FILE = "api_keys.json"
#: Keys one user may hold: enough for every program they connect, and a bound on the file.
MAX_PER_USER = 50


@dataclass(frozen=True)
class ApiKey:
    id: str
    owner: str
    digest: str
    created: float
    label: str = ""

    def public(self) -> dict[str, object]:
        return {"id": self.id, "owner": self.owner, "label": self.label,
                "created": self.created}  # fmt: skip


def new_key() -> str:
    """A fresh key (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Keys:
    """The API keys of every user, read from and written to usr/api_keys.json."""

    def __init__(self, path: Path | None = None, shared: SharedLocks | None = None) -> None:
        #: A fixed file (tests), else usr/api_keys.json wherever usr/ is at the time of asking.
        self._fixed = path
        #: The other processes changing the file (a cluster's node); None: this machine's.
        self._shared = shared
        self._lock = threading.Lock()
        self._seen: tuple[Stamp, list[ApiKey]] = (NEVER, [])

    @property
    def _path(self) -> Path:
        return self._fixed or usr_path(FILE)

    def _current(self) -> list[ApiKey]:
        stamp = stamp_of(self._path)
        with self._lock:
            if stamp != self._seen[0]:
                self._seen = (stamp, self._read())
            return self._seen[1]

    def _read(self) -> list[ApiKey]:
        if not self._path.exists():
            return []
        try:
            return [ApiKey(**row) for row in json.loads(self._path.read_text("utf-8"))["keys"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # No key works until it is repaired: safer than a key nobody can revoke.
            log.error("the API keys file %s is unreadable (%s): no user's key works until "
                      "it is restored from a backup", self._path, exc)  # fmt: skip
            return []

    @contextlib.contextmanager
    def _changing(self) -> Iterator[list[ApiKey]]:
        with self._lock, locked(self._path, self._shared):
            keys = self._read()
            yield keys
            rows = [asdict(k) for k in keys]
            write_text_atomic(self._path, json.dumps({"keys": rows}, indent=1), mode=0o600)
            self._seen = (NEVER, [])

    def any(self) -> bool:
        return bool(self._current())

    def of(self, owner: str) -> list[ApiKey]:
        return [k for k in self._current() if k.owner == owner]

    def get(self, key_id: str) -> ApiKey | None:
        return next((k for k in self._current() if k.id == key_id), None)

    def owner_of(self, key: str) -> str | None:
        """Whose key `key` is, or None; every stored digest is compared in constant time."""
        if not key:
            return None
        digest = digest_of(key)
        found = None
        for item in self._current():
            if hmac.compare_digest(item.digest, digest):
                found = item.owner
        return found

    def make(self, owner: str, label: str = "") -> tuple[ApiKey, str]:
        """A new key of `owner`: its record and the key itself (shown this once)."""
        key = new_key()
        with self._changing() as keys:
            if sum(k.owner == owner for k in keys) >= MAX_PER_USER:
                raise UserError(f"{owner} already has {MAX_PER_USER} keys: revoke one first")
            item = ApiKey(secrets.token_hex(8), owner, digest_of(key), time.time(),
                          str(label)[:100])  # fmt: skip
            keys.append(item)
        log.info("API keys: made key %s of %r", item.id, owner)
        return item, key

    def revoke(self, key_id: str) -> ApiKey | None:
        with self._changing() as keys:
            found = next((k for k in keys if k.id == key_id), None)
            if found is not None:
                keys.remove(found)
        return found

    def revoke_all(self, owner: str) -> int:
        with self._changing() as keys:
            gone = [k for k in keys if k.owner == owner]
            for item in gone:
                keys.remove(item)
        return len(gone)
