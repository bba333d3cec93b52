"""A node of a cluster: its heartbeat in Redis, the live nodes read from theirs, and the
Socket.IO message queue Flask-SocketIO is given, the claims and shared locks it asks
Redis for (claims.py), and the login sessions every node knows (redis_sessions.py). It and
the modules it imports are those that import redis-py (cluster/node.py imports them only
when CADRE_REDIS_URL is set).

Each node keeps a key `cadre:node:<id>` holding its `NodeRecord`, written with a time to
live (`CADRE_NODE_TTL`, 10 s) and written again every third of it by a daemon thread: a
node that stops says goodbye (its key deleted), and one that dies (SIGKILL, power) leaves
the list once its key expires. Whether Redis answered the last heartbeat is what `/health`
says of it: no request waits on Redis to know.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import redis

from cluster.claims import Claims
from cluster.config import ClusterConfig
from cluster.node import (
    ClusterUnavailable,
    LetGo,
    NodeRecord,
    NodesUnknown,
    RunCount,
    RunsHere,
    TakeOver,
)
from cluster.redis_runs import RedisRuns
from cluster.redis_sessions import RedisSessions
from cluster.redis_throttle import RedisThrottle
from cluster.run_queue import TAKEN_KEY

log = logging.getLogger(__name__)

#: Every node's key starts so (the URL's database keeps one cluster's keys from another's).
KEY_PREFIX = "cadre:node:"
#: Seconds to wait for Redis to accept a connection, and for an answer: a heartbeat or the
#: cluster view never hangs on a Redis that went away.
CONNECT_TIMEOUT = 2.0
ANSWER_TIMEOUT = 2.0


def node_key(node_id: str) -> str:
    return KEY_PREFIX + node_id


def socketio_channel(redis_url: str) -> str:
    """The Redis channel of this cluster's Socket.IO events. Redis's publish/subscribe knows
    no databases: two clusters on one Redis (db 0 and db 1) would hear each other's events
    on Flask-SocketIO's one default channel, so each database gets its own."""
    database = urlsplit(redis_url).path.strip("/") or "0"
    return f"cadre:{database}:socketio"


class RedisNode:
    """This process as one node of a cluster over the Redis at `config.redis_url`."""

    def __init__(self, config: ClusterConfig, address: str) -> None:
        self.config = config
        self.address = address
        self.started = time.time()
        self.client = redis.Redis.from_url(
            config.redis_url, socket_connect_timeout=CONNECT_TIMEOUT,
            socket_timeout=ANSWER_TIMEOUT, decode_responses=True,
        )  # fmt: skip
        # Calls that wait on Redis by design (the run queue's reads and answers) have a
        # client of their own, whose answers may take that long.
        self.blocking = redis.Redis.from_url(
            config.redis_url, socket_connect_timeout=CONNECT_TIMEOUT,
            socket_timeout=ANSWER_TIMEOUT + 10, decode_responses=True,
        )  # fmt: skip
        self.runs = RedisRuns(config, self.client, self.blocking, config.max_runs)
        #: The login sessions of every node (it listens for ends once the server asks).
        self.sessions = RedisSessions(self.client, config)
        self._runs: RunCount = lambda: 0
        #: Whether Redis took the last heartbeat (None: none sent yet).
        self._reachable: bool | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._beating, name="cadre-heartbeat", daemon=True)

    def socketio_options(self) -> dict[str, Any]:
        # Flask-SocketIO makes python-socketio's RedisManager of it: every emit goes through
        # Redis, and each node sends what it hears to the pages connected to it.
        return {"message_queue": self.config.redis_url,
                "channel": socketio_channel(self.config.redis_url)}  # fmt: skip

    def start(self, runs: RunCount) -> None:
        """Announce this node now (it is listed once it serves) and keep announcing it."""
        self._runs = runs
        self._warn_of_a_namesake()
        self._beat()
        self._thread.start()
        log.info("node %s in the cluster of %s (heartbeat every %.1f s, lives %.1f s)",
                 self.config.node_id, self.config.redis_address(), self.config.beat,
                 self.config.ttl)  # fmt: skip

    def stop(self) -> None:
        """No more heartbeats, and this node's key deleted: it leaves the list at once."""
        if self._stopping.is_set():
            return  # stopped already
        self._stopping.set()
        self.runs.stop()
        self.sessions.close()
        if self._thread.is_alive():
            self._thread.join(ANSWER_TIMEOUT + CONNECT_TIMEOUT + 1)
        try:
            self.client.delete(node_key(self.config.node_id))
        except redis.RedisError as exc:
            log.warning("could not take node %s off Redis's list (%s): it leaves it when its"
                        " heartbeat expires", self.config.node_id, exc)  # fmt: skip
        self.client.close()
        self.blocking.close()

    def health(self) -> dict[str, Any]:
        return {"node": self.config.node_id,
                "redis": "ok" if self._reachable else "unreachable",
                "runs": self._count()}  # fmt: skip

    def nodes(self) -> list[NodeRecord]:
        try:
            keys = sorted(self.client.scan_iter(match=KEY_PREFIX + "*", count=500))
            texts = self.client.mget(keys) if keys else []
        except redis.RedisError as exc:
            log.error("listing the cluster's nodes: Redis at %s does not answer (%s)",
                      self.config.redis_address(), exc)  # fmt: skip
            raise NodesUnknown(
                f"Redis at {self.config.redis_address()} does not answer ({exc}): the nodes"
                " cannot be listed now. Check that Redis runs and that this node reaches it"
            ) from None
        # A key that expired between the two reads is None: that node just left.
        found = [NodeRecord.from_json(text) for text in texts if text is not None]
        try:
            taken = self.client.hgetall(TAKEN_KEY)
        except redis.RedisError:
            taken = {}
        return sorted((replace(record, taken=int(taken.get(record.node, 0)))
                       for record in found if record is not None),
                      key=lambda record: record.node)  # fmt: skip

    # -- the heartbeat ---------------------------------------------------------------

    # -- runs: leases, the run queue, takeovers (cluster/redis_runs.py) -------------------

    clustered = True

    def watch_runs(self, runs_here: RunsHere, take_over: TakeOver, let_go: LetGo) -> None:
        self.runs.start(self._count, runs_here, take_over, let_go)

    def drain(self) -> None:
        self.runs.drain()
        log.info("node %s drains: it takes no new runs", self.config.node_id)
        self._beat()  # the cluster view says so at once

    def hand_over(self, chat_ids: list[str]) -> list[str]:
        return self.runs.hand_over(chat_ids)

    def run_ended(self, chat_id: str) -> None:
        self.runs.ended(chat_id)

    def login_throttle(self, local: Any) -> Any:
        return RedisThrottle(self.client, local)

    def placements(self) -> dict[str, str]:
        try:
            listed = self.runs.leases.listed()
            orphans = self.runs.leases.orphans(listed)
        except redis.RedisError as exc:
            raise self.runs.unreachable(exc) from None
        return {chat: node for chat, node in listed.items() if chat not in orphans}

    def holder(self, chat_id: str) -> str | None:
        return self.runs.holder(chat_id)

    def holds(self, chat_id: str) -> bool:
        return self.runs.holds(chat_id)

    def may_write(self, chat_id: str) -> bool:
        return self.runs.may_write(chat_id)

    def address_of(self, node_id: str) -> str | None:
        try:
            text = self.client.get(node_key(node_id))
        except redis.RedisError as exc:
            raise self.runs.unreachable(exc) from None
        record = NodeRecord.from_json(text) if text else None
        return record.address if record is not None else None

    def take_run(self, chat_id: str) -> str:
        return self.runs.take(chat_id)

    def place_run(self, chat_id: str | None) -> str:
        return self.runs.place(chat_id)

    def relay_secret(self) -> str:
        return self.runs.secret()

    def first_use(self, nonce: str) -> bool:
        return self.runs.first_use(nonce)

    def _count(self) -> int:
        try:
            return self._runs()
        except Exception:  # the count is the server's: its failure must not end the beats
            log.exception("counting node %s's running chats failed", self.config.node_id)
            return 0

    def _record(self) -> NodeRecord:
        return NodeRecord(self.config.node_id, self.address, self.started, self._runs(),
                          time.time(), self.config.max_runs, self.runs.draining)  # fmt: skip

    def _beating(self) -> None:
        while not self._stopping.wait(self.config.beat):
            self._beat()

    def _beat(self) -> None:
        try:
            record = self._record()
        except Exception:  # the count is the server's: its failure must not end the beats
            log.exception("counting node %s's running chats failed", self.config.node_id)
            return
        try:
            self.client.set(node_key(record.node), record.to_json(),
                            px=int(self.config.ttl * 1000))  # fmt: skip
        except redis.RedisError as exc:
            if self._reachable is not False:
                log.error("Redis at %s does not answer (%s): node %s serves on and tries"
                          " again every %.1f s", self.config.redis_address(), exc,
                          self.config.node_id, self.config.beat)  # fmt: skip
            self._reachable = False
            return
        if self._reachable is False:
            log.info("Redis at %s answers again", self.config.redis_address())
        self._reachable = True
        try:
            self.runs.keep()
        except redis.RedisError as exc:
            log.error("node %s could not renew its leases (%s)", self.config.node_id, exc)

    def _warn_of_a_namesake(self) -> None:
        """Two live nodes of one name would share one key (and later one set of leases)."""
        try:
            text = self.client.get(node_key(self.config.node_id))
        except redis.RedisError:
            return  # the first beat says so
        other = NodeRecord.from_json(text) if text else None
        if other is not None:
            log.warning("a node named %s is in Redis already (at %s, seen %.0f s ago): this"
                        " node's previous process, or another node of the same name; give"
                        " each node its own %s", other.node, other.address,
                        time.time() - other.seen, "CADRE_NODE_ID")  # fmt: skip

    # -- coordination (claims.py) ----------------------------------------------------

    def claim(self, key: str, ttl: float) -> bool:
        return self._claims.claim(key, ttl)

    def shared_lock(self, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        return self._claims.shared_lock(name, timeout)

    def another_alive_since(self, moment: float) -> bool:
        # Its own name is left out: a record of it is this node's previous process, whose
        # runs ended with it (read at start, before this node's first heartbeat).
        try:
            nodes = self.nodes()
        except NodesUnknown as exc:  # logged where Redis failed
            raise ClusterUnavailable(str(exc)) from None
        return any(n.node != self.config.node_id and n.started <= moment for n in nodes)

    def session_book(self) -> RedisSessions:
        return self.sessions

    @cached_property
    def _claims(self) -> Claims:
        # Made at first use, on the heartbeat's client (its pool serves every thread); two
        # threads asking first would make two, which share that client and keep no state.
        return Claims(self.client, self.config)
