"""Claims and shared locks in Redis: how the nodes of a cluster agree on who does what.

A claim is a key set only if it is not there yet (`SET cadre:claim:<key> <node> NX PX`):
the first node to ask for it within its time to live gets it, every later asker does not
(the scheduler claims `fire:<task>:<due time>`, so a due run starts on one node). Nothing
releases a claim: it expires.

A shared lock is redis-py's `Lock` on `cadre:lock:<name>`: a key set if absent, holding a
token of its holder (this node's id and a random part, so who holds it can be read in
Redis), freed by a Lua script that deletes it only while the token is still the holder's.
It lives `timeout` seconds (a holder that dies frees it then), and a node waits as long
for it. Each change of tasks.json is made under the lock `tasks`.

Keys live in the database of CADRE_REDIS_URL (Redis keeps each database's keys apart) and
start with `cadre:`. When Redis does not answer, or a lock is not got in time, the asker
gets `ClusterUnavailable` in plain words; it decides what waits, and it logs it (a
scheduler asking every second would otherwise fill the log here).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.exceptions import LockNotOwnedError

from cluster.config import ClusterConfig
from cluster.node import ClusterUnavailable

log = logging.getLogger(__name__)

CLAIM_PREFIX = "cadre:claim:"
LOCK_PREFIX = "cadre:lock:"
#: Seconds between two tries at a lock another node holds: changes of tasks.json take
#: milliseconds, so a waiter polls often (redis-py's default is 0.1).
LOCK_POLL = 0.02


class Claims:
    """Claims and shared locks of the node `config.node_id`, through `client`."""

    def __init__(self, client: redis.Redis, config: ClusterConfig) -> None:
        self.client = client
        self.config = config

    def claim(self, key: str, ttl: float) -> bool:
        """True for the first asker of `key` in the cluster within `ttl` seconds."""
        try:
            taken = self.client.set(CLAIM_PREFIX + key, self.config.node_id, nx=True,
                                    px=max(1, round(ttl * 1000)))  # fmt: skip
        except redis.RedisError as exc:
            raise self._unavailable(exc, f"the claim {key!r} cannot be asked for") from None
        return bool(taken)

    @contextmanager
    def shared_lock(self, name: str, timeout: float = 10.0) -> Iterator[None]:
        """Held across the cluster while the block runs (at most `timeout` seconds)."""
        lock = self.client.lock(LOCK_PREFIX + name, timeout=timeout, sleep=LOCK_POLL,
                                blocking=True, blocking_timeout=timeout)  # fmt: skip
        token = f"{self.config.node_id}:{uuid.uuid4().hex}"
        try:
            got = lock.acquire(token=token)
        except redis.RedisError as exc:
            raise self._unavailable(exc, f"the cluster's lock {name!r} cannot be taken") from None
        if not got:
            raise ClusterUnavailable(
                f"the cluster's lock {name!r} (in Redis at {self.config.redis_address()}) was"
                f" not got within {timeout:g} s: another node holds it (it frees itself within"
                f" {timeout:g} s of that node's end). Try again; if it goes on, check the other"
                " nodes' logs"
            )
        try:
            yield
        finally:
            self._release(lock, name, timeout)

    def _release(self, lock: redis.lock.Lock, name: str, timeout: float) -> None:
        try:
            lock.release()
        except LockNotOwnedError:
            # The block outlived the lock: another node may have changed what it guards
            # meanwhile. Said loudly: `timeout` is meant to be far longer than any holder.
            log.error("the cluster's lock %r was held longer than its %g s and expired before"
                      " its release: another node may have taken it meanwhile", name,
                      timeout)  # fmt: skip
        except redis.RedisError as exc:
            log.warning("the cluster's lock %r could not be released (Redis at %s: %s): it"
                        " frees itself within %g s", name, self.config.redis_address(), exc,
                        timeout)  # fmt: skip

    def _unavailable(self, exc: redis.RedisError, what: str) -> ClusterUnavailable:
        return ClusterUnavailable(
            f"Redis at {self.config.redis_address()} does not answer ({exc}): {what} now."
            " Check that Redis runs and that this node reaches it"
        )
