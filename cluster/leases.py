"""Leases on chats: which node runs a chat now, kept in Redis (one owner per running chat).

A node takes a chat's lease before its run starts (`SET cadre:lease:<chat> <node> NX PX`),
renews every lease it holds with each heartbeat, and gives one up when the chat is no
longer running there. Renewing and giving up check the holder first, in one Lua script
each, so a node whose lease expired (it stalled, or the network split) never renews or
deletes the lease another node took meanwhile: it learns it lost it instead.

Every lease is also listed in one hash, `cadre:runs` (chat → node), so that when a node dies
the others find what it ran: a chat listed there whose lease has expired was cut short
(cluster/takeover.py takes it over). The list entry goes only when the lease is given up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a process alone reads HANDED, and must not import redis-py for it
    import redis

LEASE_PREFIX = "cadre:lease:"
#: How the runs list marks a chat its node handed over as it stopped (not a failure).
HANDED = "handover:"
#: chat id → the node that took its lease last (kept until the lease is given up).
RUNS_KEY = "cadre:runs"

# KEYS[1] the runs hash, KEYS[2..n] leases; ARGV[1] this node, ARGV[2] milliseconds,
# ARGV[3..] the chat ids. Returns each lease's outcome: 1 renewed (or taken again: Redis
# lost it, restarted without its data), 0 held by another node.
_RENEW = """
local kept = {}
for i = 2, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    kept[i - 1] = 1
  elseif not holder then
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
    redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[1])
    kept[i - 1] = 1
  else
    kept[i - 1] = 0
  end
end
return kept
"""
# KEYS[1] the lease, KEYS[2] the runs hash; ARGV[1] this node, ARGV[2] the chat id.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then
  redis.call('HDEL', KEYS[2], ARGV[2])
end
return 1
"""
# KEYS[1] the lease, KEYS[2] the runs hash; ARGV[1] this node, ARGV[2] ms, ARGV[3] chat.
# Takes a free lease or renews this node's own; returns the holder either way.
_TAKE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return holder
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
return ARGV[1]
"""


# KEYS[1] the lease, KEYS[2] the runs hash; ARGV[1] this node, ARGV[2] the chat id.
_HAND_OVER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[2], ARGV[2], 'handover:' .. ARGV[1])
  return 1
end
return 0
"""


def lease_key(chat_id: str) -> str:
    return LEASE_PREFIX + chat_id


class Leases:
    """The leases of one node (`node_id`) over a Redis client that decodes answers."""

    def __init__(self, client: redis.Redis, node_id: str, ttl: float) -> None:
        self.client = client
        self.node_id = node_id
        self.ttl_ms = int(ttl * 1000)
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._hand_over = client.register_script(_HAND_OVER)

    def take(self, chat_id: str) -> str:
        """The chat's holder once this node asked: this node when the lease was free or its
        own already (renewed), else the node that holds it."""
        return str(self._take(keys=[lease_key(chat_id), RUNS_KEY],
                              args=[self.node_id, self.ttl_ms, chat_id]))  # fmt: skip

    def holder(self, chat_id: str) -> str | None:
        """The node that holds the chat's lease now, if any."""
        found = self.client.get(lease_key(chat_id))
        return str(found) if found is not None else None

    def renew(self, chat_ids: Iterable[str]) -> list[str]:
        """Renew this node's leases on `chat_ids` (one that expired unclaimed, or that Redis
        lost, is taken again); returns those another node holds now."""
        ids = list(chat_ids)
        if not ids:
            return []
        kept = self._renew(keys=[RUNS_KEY, *(lease_key(c) for c in ids)],
                           args=[self.node_id, self.ttl_ms, *ids])  # fmt: skip
        return [chat_id for chat_id, ok in zip(ids, kept, strict=True) if not ok]

    def release(self, chat_id: str) -> None:
        """Give the lease up (only if this node holds it) and take the chat off the list."""
        self._release(keys=[lease_key(chat_id), RUNS_KEY], args=[self.node_id, chat_id])

    def hand_over(self, chat_id: str) -> bool:
        """Give the lease up for another node to take the chat over at once (this node
        stops); False when it was not this node's."""
        return bool(self._hand_over(keys=[lease_key(chat_id), RUNS_KEY],
                                    args=[self.node_id, chat_id]))  # fmt: skip

    def listed(self) -> dict[str, str]:
        """Every chat on the runs list and the node that took it last."""
        return {str(k): str(v) for k, v in self.client.hgetall(RUNS_KEY).items()}

    def orphans(self, listed: dict[str, str] | None = None) -> dict[str, str]:
        """Chats on the runs list whose lease has expired (their node died or stalled) or
        was handed over, with the node that had them (`HANDED` before it if handed over)."""
        listed = self.listed() if listed is None else listed  # read already: not again
        if not listed:
            return {}
        ids = list(listed)
        holders = self.client.mget([lease_key(c) for c in ids])
        pairs = zip(ids, holders, strict=True)
        return {chat_id: listed[chat_id] for chat_id, holder in pairs if holder is None}
