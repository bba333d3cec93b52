"""This process as a node: the seam the server asks, whether Cadre runs alone or in a
cluster (`node_for` decides from the config).

The server asks a node what to give Flask-SocketIO (a message queue, or nothing), what
`/health` adds, and which nodes are alive; `start` hands it a count of this node's running
chats for its heartbeat. `Alone` answers for the one process without any I/O; a cluster's
node is `redis_node.RedisNode`, imported only when a Redis URL is set.

A node also coordinates work across the cluster: `claim` (the first asker of a key gets
it: the scheduler fires a due run only where it was claimed), `shared_lock` (one holder
at a time in the whole cluster: each change of tasks.json) and `another_alive_since`
(whether a run marked going on may be another live node's). `Alone` grants every claim,
locks within its process and knows no other node; a cluster's node asks Redis
(claims.py, and the heartbeats).

A node says where login sessions are kept (`session_book`): a cluster's in Redis
(redis_sessions.py), so any node serves any page; None alone (the server keeps them in
usr/sessions.json).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from cluster.config import ClusterConfig
from cluster.sessions import SessionBook
from helpers.errors import Unavailable

log = logging.getLogger(__name__)

#: The number of chats of this node that are running now.
RunCount = Callable[[], int]
#: Whether the chat of this id runs on this node now.
RunsHere = Callable[[str], bool]
#: Told the id of a chat this node took over from `node` (which died), and that node.
TakeOver = Callable[[str, str], None]
#: Told the id of a chat whose lease another node took while this one still ran it.
LetGo = Callable[[str], None]


class ClusterUnavailable(Unavailable):
    """The cluster cannot coordinate now: Redis does not answer, or a shared lock was not
    got in time. Nothing was claimed or locked; the text says so in plain words, with the
    Redis address and what to check. The caller decides what waits (a due run stays due)."""


class NodesUnknown(Exception):  # noqa: N818 - what the asker meets, not a failure of theirs
    """The live nodes cannot be listed now (Redis does not answer); the text says so in
    plain words."""


@dataclass(frozen=True)
class NodeRecord:
    """What a node says of itself in its heartbeat (and the admins' cluster view shows)."""

    node: str
    #: Where it serves (host:port as it was started).
    address: str
    #: When it started (Unix time).
    started: float
    #: Its chats that run now.
    runs: int
    #: When it said all this (Unix time).
    seen: float
    #: The most runs it takes from the run queue at once (its load is `runs / limit`).
    limit: int = 0
    #: It stops: it takes no new runs, and hands over those still running at its end.
    draining: bool = False
    #: Runs it took from the run queue (since Redis last started); the cluster view adds it.
    taken: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> NodeRecord | None:
        """The record, or None (logged) when the text is not one: a node of another
        version, or a key someone wrote by hand, must not hide the others."""
        try:
            data = json.loads(text)
            return cls(node=str(data["node"]), address=str(data["address"]),
                       started=float(data["started"]), runs=int(data["runs"]),
                       seen=float(data["seen"]), limit=int(data.get("limit", 0)),
                       draining=bool(data.get("draining", False)))  # fmt: skip
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("a node's record in Redis is not one Cadre reads (%s): %.200r", exc, text)
            return None


class Node(Protocol):
    """This process, as the server sees it."""

    config: ClusterConfig
    #: When this process started (Unix time), as its record says.
    started: float

    def socketio_options(self) -> dict[str, Any]:
        """More keyword arguments for Flask-SocketIO's `SocketIO` (its message queue)."""
        ...

    def start(self, runs: RunCount) -> None:
        """Begin what a node does in the background (its heartbeat)."""
        ...

    def stop(self) -> None:
        """End it, and say goodbye where others would look."""
        ...

    def health(self) -> dict[str, Any]:
        """What `/health` adds for anyone: nothing for a process alone."""
        ...

    def nodes(self) -> list[NodeRecord]:
        """Every live node, this one included; NodesUnknown when they cannot be known."""
        ...

    # -- runs: which node runs a chat (cluster/leases.py, cluster/run_queue.py) -----------
    # Asked only in a cluster (`clustered`); each raises NodesUnknown when Redis does not
    # answer.

    #: Whether this process is one node of several (False: `Alone`).
    clustered: bool

    def watch_runs(self, runs_here: RunsHere, take_over: TakeOver, let_go: LetGo) -> None:
        """Keep the leases of the chats that run here, take over those of dead nodes, and
        let go of a chat whose lease another node took meanwhile."""
        ...

    def drain(self) -> None:
        """Stop taking new runs and dead nodes' chats (this node is stopping)."""
        ...

    def placements(self) -> dict[str, str]:
        """Each chat a node holds the lease of → that node (the cluster view)."""
        ...

    def run_ended(self, chat_id: str) -> None:
        """A run of the chat ended here: its lease goes at the next heartbeat unless another
        run of it began."""
        ...

    def login_throttle(self, local: Any) -> Any:
        """The login throttle the nodes share, over this node's `local` one (which a
        process alone keeps: it is returned as it is)."""
        ...

    def hand_over(self, chat_ids: list[str]) -> list[str]:
        """Give up the leases of these saved chats for other nodes to go on with them at
        once; the ids handed over."""
        ...

    def holder(self, chat_id: str) -> str | None:
        """The other node that holds the chat's lease now (None: none does, or this one)."""
        ...

    def holds(self, chat_id: str) -> bool:
        """Does this node hold the chat's lease, as far as it knows (no Redis asked)?"""
        ...

    def may_write(self, chat_id: str) -> bool:
        """May this node write the chat's file now? Not once another node took its lease
        over (this node stalled past it)."""
        ...

    def address_of(self, node_id: str) -> str | None:
        """Where a live node serves; None when it is not alive."""
        ...

    def take_run(self, chat_id: str) -> str:
        """Take the chat's lease for a run here: this node's id when taken (or held
        already), else the node that holds it."""
        ...

    def place_run(self, chat_id: str | None) -> str:
        """The node that takes the run of `chat_id` (None: a new chat): offered to the run
        queue; NodesUnknown when none took it."""
        ...

    def relay_secret(self) -> str:
        """The cluster's secret that signs requests between nodes (cluster/relay_auth.py)."""
        ...

    def first_use(self, nonce: str) -> bool:
        """True the first time `nonce` is asked about (a relayed request's, never twice)."""

    def claim(self, key: str, ttl: float) -> bool:
        """True for the first asker of `key` in the cluster within `ttl` seconds (the node
        that asked first, once), False for every later asker until then (this node's again
        too); ClusterUnavailable when it cannot be known now. A process alone grants every
        claim: nothing else could have asked."""
        ...

    def shared_lock(self, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        """Held by one holder at a time across the cluster while the block runs, for at
        most `timeout` seconds (a holder that dies frees it then), waited for as long;
        ClusterUnavailable when it is not got."""
        ...

    def another_alive_since(self, moment: float) -> bool:
        """Whether a node other than this one, alive now, started at or before `moment`
        (Unix time): one that may have begun then something still going on (the scheduler
        leaves such a task's run marked going on to it). False alone; ClusterUnavailable
        when the live nodes cannot be known."""
        ...

    def session_book(self) -> SessionBook | None:
        """Where the cluster keeps login sessions, known to every node at once; None for a
        process alone (the server keeps its own)."""
        ...


class Alone:
    """Cadre as one process (no CADRE_REDIS_URL): no Redis, no heartbeat, nothing to add."""

    def __init__(self, config: ClusterConfig, address: str) -> None:
        self.config = config
        self.address = address
        self.started = time.time()
        self._runs: RunCount = lambda: 0
        #: `shared_lock`'s locks by name, made at their first use (this process's alone).
        self._named_locks: dict[str, threading.Lock] = {}

    def socketio_options(self) -> dict[str, Any]:
        return {}

    def start(self, runs: RunCount) -> None:
        self._runs = runs

    def stop(self) -> None:
        pass

    def health(self) -> dict[str, Any]:
        return {}  # the desktop's /health stays as it was

    def nodes(self) -> list[NodeRecord]:
        return [NodeRecord(self.config.node_id, self.address, self.started, self._runs(),
                           time.time())]  # fmt: skip

    # A process alone runs every chat itself: nothing below is asked of it.
    clustered = False

    def watch_runs(self, runs_here: RunsHere, take_over: TakeOver, let_go: LetGo) -> None:
        pass

    def drain(self) -> None:
        pass

    def placements(self) -> dict[str, str]:
        return {}

    def run_ended(self, chat_id: str) -> None:
        pass

    def login_throttle(self, local: Any) -> Any:
        return local

    def hand_over(self, chat_ids: list[str]) -> list[str]:
        return []

    def holder(self, chat_id: str) -> str | None:
        return None

    def holds(self, chat_id: str) -> bool:
        return True

    def may_write(self, chat_id: str) -> bool:
        return True

    def address_of(self, node_id: str) -> str | None:
        return self.address if node_id == self.config.node_id else None

    def take_run(self, chat_id: str) -> str:
        return self.config.node_id

    def place_run(self, chat_id: str | None) -> str:
        return self.config.node_id

    def relay_secret(self) -> str:
        raise NodesUnknown("a process alone relays nothing")

    def first_use(self, nonce: str) -> bool:
        return True

    def claim(self, key: str, ttl: float) -> bool:
        return True  # no other node to have asked first

    @contextmanager
    def shared_lock(self, name: str, timeout: float = 10.0) -> Iterator[None]:
        # setdefault is one step: two threads asking for a new name first get one lock.
        lock = self._named_locks.setdefault(name, threading.Lock())
        if not lock.acquire(timeout=timeout):
            raise ClusterUnavailable(
                f"the lock {name!r} was not got within {timeout:g} s: something in this"
                " process holds it; try again, and see the server's log if it goes on"
            )
        try:
            yield
        finally:
            lock.release()

    def another_alive_since(self, moment: float) -> bool:
        return False  # no other node

    def session_book(self) -> SessionBook | None:
        return None  # usr/sessions.json, this process's (server/security/sessions.py)


def node_address(host: str, port: int) -> str:
    """Where a node serves, as others would reach it: host:port, with this machine's name
    for an address that means every interface."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def node_for(config: ClusterConfig, address: str) -> Node:
    """This process's node: `Alone`, or a cluster's node when a Redis URL is set (redis-py
    is imported then, and only then)."""
    if not config.enabled:
        return Alone(config, address)
    from cluster.redis_node import RedisNode  # imports redis-py: a cluster's alone

    return RedisNode(config, address)
