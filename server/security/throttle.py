"""The login throttle: an attempt is counted before its password is checked.

An attempt takes its place under each of its keys (its client's address and
the account it names, or the key of a browser that logged in before) and
only then is the password checked (about 50 ms of scrypt), so attempts sent
in parallel cannot slip in while earlier ones are being checked: a key with
MAX_ATTEMPTS attempts in the last WINDOW seconds takes no more until the
oldest one ages out. A successful login clears the keys it used.

The client's address is the connection's, or, when that is one of the
`trusted_proxies`, the nearest address in `X-Forwarded-For` that is not a
trusted proxy (proxies append the address they saw, so what the client wrote
itself is further left and never chosen over it).
"""

from __future__ import annotations

import ipaddress
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

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


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


def _networks(entries: Iterable[str]) -> list[Network]:
    found = []
    for entry in entries:
        try:
            found.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            continue  # not an address: Settings shows what was stored
    return found


def _within(address: str, networks: list[Network]) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in networks)


def client_address(remote: str, forwarded_for: str | None, trusted_proxies: Iterable[str]) -> str:
    """Who sent the request: `remote`, unless a trusted proxy forwarded it for someone."""
    networks = _networks(trusted_proxies)
    if not forwarded_for or not _within(remote, networks):
        return remote[:KEY_CHARS]
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _within(hop, networks):
            return hop[:KEY_CHARS]
    return (hops[0] if hops else remote)[:KEY_CHARS]
