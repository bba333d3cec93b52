"""The login throttle of a cluster: attempts counted in Redis, so that someone guessing
passwords through a load balancer gets MAX_ATTEMPTS per key in all, not per node.

The same sliding window as server/security/throttle.py (which a process alone keeps in
memory), as one sorted set per key (`cadre:throttle:<key>`, scored by the time of each
attempt), read and changed by one Lua script: an attempt is counted under every key, or,
if one of them is full, under none, all at once, so attempts sent in parallel to several
nodes cannot slip in together. When Redis does not answer, the node counts in its own
memory meanwhile (`fallback`): a login refused for want of Redis would lock everyone
out, and sessions are refused then anyway (cluster/redis_sessions.py).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import redis

log = logging.getLogger(__name__)

PREFIX = "cadre:throttle:"
# KEYS the attempts' keys; ARGV[1] now (ms), ARGV[2] the window (ms), ARGV[3] the limit,
# ARGV[4] this attempt's member. Returns 0 (counted) or the ms until a full key frees.
_ADMIT = """
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local wait = 0
for _, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  if redis.call('ZCARD', key) >= limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    wait = math.max(wait, tonumber(oldest[2]) + window - now)
  end
end
if wait > 0 then
  return wait
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
end
return 0
"""


class LocalThrottle(Protocol):
    limit: int
    window: float

    def admit(self, keys: Sequence[str]) -> float: ...

    def succeeded(self, keys: Iterable[str]) -> None: ...


class RedisThrottle:
    """The login throttle over `client`, with `fallback` (its limit and window) for when
    Redis does not answer."""

    def __init__(self, client: redis.Redis, fallback: LocalThrottle) -> None:
        self.client = client
        self.fallback = fallback
        self.limit = fallback.limit
        self.window = fallback.window
        self._admit: Any = client.register_script(_ADMIT)

    def admit(self, keys: Sequence[str]) -> float:
        """0 when the attempt is counted under every key; else the seconds to wait."""
        try:
            wait = self._admit(keys=[PREFIX + key for key in keys],
                               args=[int(time.time() * 1000), int(self.window * 1000),
                                     self.limit, uuid.uuid4().hex])  # fmt: skip
        except redis.RedisError as exc:
            log.warning("the login throttle counts on this node alone: Redis does not answer"
                        " (%s)", exc)  # fmt: skip
            return self.fallback.admit(keys)
        return float(wait) / 1000

    def succeeded(self, keys: Iterable[str]) -> None:
        names = [PREFIX + key for key in keys]
        self.fallback.succeeded(names)
        try:
            if names:
                self.client.delete(*names)
        except redis.RedisError as exc:
            log.warning("a login's throttle keys stay in Redis until they expire (%s)", exc)
