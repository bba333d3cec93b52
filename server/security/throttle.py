"""The login throttle: an attempt is counted before its password is checked.

An attempt takes its place under each of its keys (its client's address and
the account it names, or the key of a browser that logged in before) and
only then is the password checked (about 50 ms of scrypt), so attempts sent
in parallel cannot slip in while earlier ones are being checked: a key with
MAX_ATTEMPTS attempts in the last WINDOW seconds takes no more until the
oldest one ages out. A successful login clears the keys it used.

The client's address is server/security/forwarded.py's `client_address`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence

#: Attempts per key within WINDOW seconds.
MAX_ATTEMPTS, WINDOW = 5, 300.0
#: Keys remembered at most (the ones idle longest are forgotten first).
MAX_KEYS = 10_000
#: Longest address or account name kept as a key.
KEY_CHARS = 100


class Throttle:
    """Attempts per key in a sliding window; thread-safe."""

    def __init__(self, limit: int = MAX_ATTEMPTS, window: float = WINDOW) -> None:
        self.limit = limit
        self.window = window
        self._attempts: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def admit(self, keys: Sequence[str]) -> float:
        """Count an attempt under every key and return 0, or, if one of them is full,
        count nothing and return the seconds until it takes attempts again."""
        now = time.monotonic()
        with self._lock:
            queues = [self._recent(key, now) for key in keys]
            full = [q for q in queues if len(q) >= self.limit]
            if full:
                return max(self.window - (now - q[0]) for q in full)
            for key, queue in zip(keys, queues, strict=True):
                queue.append(now)
                self._attempts.pop(key, None)
                self._attempts[key] = queue  # most recently used last
            while len(self._attempts) > MAX_KEYS:
                del self._attempts[next(iter(self._attempts))]
            return 0.0

    def succeeded(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._attempts.pop(key, None)

    def _recent(self, key: str, now: float) -> deque[float]:
        queue = self._attempts.get(key, deque())
        while queue and now - queue[0] > self.window:
            queue.popleft()
        return queue


def login_keys(address: str, account: str) -> list[str]:
    """The keys a password check is counted under: the client's address and the account
    (a login, or a password re-entered for a change: server/security/reauth.py)."""
    return [f"address {address}", f"account {account.casefold()[:KEY_CHARS]}"]
