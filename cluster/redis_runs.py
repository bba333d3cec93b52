"""The runs of one node of a cluster: the leases it holds, the runs it takes from the queue,
and the chats of dead nodes it takes over (the node's heartbeat drives `keep`).

Leases (cluster/leases.py) are taken when a run starts here, or when this node took the
run from the queue (cluster/run_queue.py) and waits for the request that starts it; they
are renewed with every heartbeat while the chat runs here (or while such a reservation
lasts) and given up at the first heartbeat after. A chat on the runs list whose lease has
expired belonged to a node that died or stalled: the first node to take its lease takes it
over (the server loads it from disk and goes on: server/cluster/takeover.py).
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from cluster.config import ClusterConfig
from cluster.leases import Leases
from cluster.node import LetGo, NodesUnknown, RunCount, RunsHere, TakeOver
from cluster.relay_auth import new_secret
from cluster.run_queue import OFFER_WAIT, NoRoom, RunQueue

log = logging.getLogger(__name__)

#: Seconds a lease taken for a run from the queue is kept while its request is on its way.
RESERVED = 30.0
#: Seconds a new chat's run taken from the queue counts as this node's while its request
#: is on its way (the asking node hands it over as soon as it hears: well within this).
COMING = 2 * OFFER_WAIT
SECRET_KEY = "cadre:relay-secret"
NONCE_PREFIX = "cadre:nonce:"
#: The share of a lease's life for which a node, having taken or renewed it, writes its
#: chat without asking Redis again (it renews every third of that life).
SURE = 0.8
#: Runs a node takes from the queue at most, unless CADRE_NODE_RUNS says otherwise.
DEFAULT_LIMIT = 32


class RedisRuns:
    """Which chats this node runs, over `client` (answers decoded, short timeouts) and
    `blocking` (a client whose calls may wait for the queue)."""

    def __init__(self, config: ClusterConfig, client: redis.Redis, blocking: redis.Redis,
                 limit: int = DEFAULT_LIMIT) -> None:  # fmt: skip
        self.config = config
        self.client = client
        self.node_id = config.node_id
        self.leases = Leases(client, config.node_id, config.ttl)
        self.queue = RunQueue(client, blocking, self.leases, config.node_id)
        self.limit = limit
        self._lock = threading.Lock()
        #: Chats whose lease this node holds → until when (monotonic) a reservation lasts
        #: (0: held for a run that started here).
        self._held: dict[str, float] = {}
        #: Until when (monotonic) each new chat's run taken from the queue counts here: its
        #: chat has no lease until its request comes and starts it (`take`).
        self._coming: list[float] = []
        self._runs_here: RunsHere = lambda _chat: False
        self._take_over: TakeOver | None = None
        self._let_go: LetGo = lambda _chat: None
        #: Chats being taken over now (their loading runs on a thread of its own).
        self._taking: set[str] = set()
        #: This node stops: it takes no more runs, and takes over no chat.
        self.draining = False
        #: Chat → until when (monotonic) this node is sure it still holds the lease: a
        #: little less than a lease's life after it was last taken or renewed. Past it (the
        #: node stalled), a write asks Redis first (`may_write`).
        self._sure_until: dict[str, float] = {}
        #: Chats whose lease another node took while this one ran them (being let go).
        self._lost: set[str] = set()

    def start(self, runs: RunCount, runs_here: RunsHere, take_over: TakeOver,
              let_go: LetGo) -> None:  # fmt: skip
        self._runs_here = runs_here
        self._take_over = take_over
        self._let_go = let_go
        try:
            # Its load: the chats running here, or held for a run about to start here (a
            # run taken from the queue is not running yet when the next entry comes).
            self.queue.start(lambda: max(runs(), self._holding()), self.limit, self._reserved)
        except redis.RedisError as exc:
            log.error("node %s cannot join the run queue (%s): it takes no new runs from"
                      " it", self.node_id, exc)  # fmt: skip

    def stop(self) -> None:
        self.queue.stop()

    def drain(self) -> None:
        """Take no new run from the queue, and no dead node's chat."""
        self.draining = True
        self.queue.stop()

    def hand_over(self, chat_ids: list[str]) -> list[str]:
        """Give up the leases of `chat_ids` (saved, no longer running here) for other nodes
        to take them over at once; the ids whose leases this node still held."""
        handed = []
        for chat_id in chat_ids:
            try:
                if self.leases.hand_over(chat_id):
                    handed.append(chat_id)
            except redis.RedisError as exc:
                log.error("node %s could not hand chat %s over (%s): another node takes it"
                          " over once its lease expires", self.node_id, chat_id, exc)  # fmt: skip
            with self._lock:
                self._held.pop(chat_id, None)
        return handed

    def unreachable(self, exc: Exception) -> NodesUnknown:
        log.error("Redis at %s does not answer (%s)", self.config.redis_address(), exc)
        return NodesUnknown(
            f"the cluster's Redis ({self.config.redis_address()}) does not answer, so no new"
            " run can start now; chats already running go on. Try again once Redis is back,"
            " or ask an admin to check Redis"
        )

    # -- asked by the server -------------------------------------------------------------

    def holder(self, chat_id: str) -> str | None:
        try:
            holder = self.leases.holder(chat_id)
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None
        return holder if holder != self.node_id else None

    def take(self, chat_id: str) -> str:
        try:
            holder = self.leases.take(chat_id)
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None
        if holder == self.node_id:
            with self._lock:
                if chat_id not in self._held and self._coming:
                    self._coming.pop(0)  # a new chat's run that came: counted by its lease now
            # Kept a little while even before the run shows as running here (and once it
            # does, for as long as it runs).
            self._hold(chat_id, 2 * self.config.beat)
        return holder

    def may_write(self, chat_id: str) -> bool:
        """May this node write the chat's file? Not once another node took its lease over
        (this node stalled past it: the file is theirs). Asked before every save of a chat:
        answered from memory while the lease was renewed lately; after a stall, by Redis
        (and the lease taken again if nobody took it). While Redis does not answer, yes:
        the node's running chats go on, and are saved, until it is back."""
        now = time.monotonic()
        with self._lock:
            if chat_id in self._lost:
                return False
            if chat_id not in self._held or now < self._sure_until.get(chat_id, 0.0):
                return True
        try:
            holder = self.leases.take(chat_id)
        except redis.RedisError:
            return True
        if holder == self.node_id:
            with self._lock:
                self._sure_until[chat_id] = now + SURE * self.config.ttl
            return True
        self._lose(chat_id)
        return False

    def _lose(self, chat_id: str) -> None:
        """Another node took the chat over while this one still ran it: this node's copy
        stops, unsaved (the file is theirs now), at once and once."""
        with self._lock:
            if chat_id in self._lost:
                return
            self._lost.add(chat_id)
            self._held.pop(chat_id, None)
            self._sure_until.pop(chat_id, None)
        log.error("node %s lost its lease on chat %s (it was slow, or cut off from Redis):"
                  " another node runs it now, and this node stops its copy", self.node_id,
                  chat_id)  # fmt: skip
        threading.Thread(target=self._let_go_once, args=(chat_id,), daemon=True,
                         name=f"cadre-let-go-{chat_id}").start()  # fmt: skip

    def _let_go_once(self, chat_id: str) -> None:
        try:
            self._let_go(chat_id)
        except Exception:
            log.exception("node %s could not stop its copy of chat %s", self.node_id, chat_id)
        finally:
            with self._lock:
                self._lost.discard(chat_id)

    def place(self, chat_id: str | None) -> str:
        try:
            return self.queue.offer(chat_id)
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None
        except NoRoom:
            log.warning("no node took a run of chat %s from the queue", chat_id or "(new)")
            raise NodesUnknown(
                "every node of the cluster is at its limit of running chats (or none takes"
                " runs now): try again in a moment"
            ) from None

    def secret(self) -> str:
        # Read each time, never kept: a Redis restarted without its data has a new one,
        # which every node must use alike.
        try:
            found = self.client.get(SECRET_KEY)
            if found is None:
                self.client.set(SECRET_KEY, new_secret(), nx=True)
                found = self.client.get(SECRET_KEY)
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None
        return str(found)

    def first_use(self, nonce: str) -> bool:
        try:
            return bool(self.client.set(NONCE_PREFIX + nonce, self.node_id, nx=True, ex=120))
        except redis.RedisError as exc:
            raise self.unreachable(exc) from None

    def _holding(self) -> int:
        now = time.monotonic()
        with self._lock:
            self._coming = [until for until in self._coming if until > now]
            return len(self._held) + len(self._coming)

    def holds(self, chat_id: str) -> bool:
        with self._lock:
            return chat_id in self._held

    def ended(self, chat_id: str) -> None:
        """A run of the chat ended here: no reservation keeps its lease any more."""
        with self._lock:
            if chat_id in self._held:
                self._held[chat_id] = 0.0

    def _reserved(self, chat_id: str | None) -> None:
        if chat_id is None:  # a new chat's run: it counts here until its request comes
            with self._lock:
                self._coming.append(time.monotonic() + COMING)
            return
        self._hold(chat_id, RESERVED)

    def _hold(self, chat_id: str, seconds: float) -> None:
        """This node took the chat's lease: kept `seconds` even if no run starts here."""
        now = time.monotonic()
        with self._lock:
            self._held[chat_id] = now + seconds
            self._sure_until[chat_id] = now + SURE * self.config.ttl
            self._lost.discard(chat_id)

    # -- every heartbeat -----------------------------------------------------------------

    def keep(self) -> None:
        """Renew the leases of chats that run here (or are reserved), give up the others,
        and take over the chats of dead nodes. Redis errors are the heartbeat's to tell."""
        now = time.monotonic()
        with self._lock:
            held = dict(self._held)
        keep, done = [], []
        for chat_id, until in held.items():
            running = self._runs_here(chat_id)
            if running and until:  # a reserved run that started: held for its run now
                with self._lock:
                    self._held[chat_id] = 0.0
            (keep if running or until > now else done).append(chat_id)
        for chat_id in done:
            self.leases.release(chat_id)
            with self._lock:
                if self._held.get(chat_id) == held[chat_id]:
                    del self._held[chat_id]
        lost = self.leases.renew(keep)
        with self._lock:
            for chat_id in set(keep) - set(lost):
                self._sure_until[chat_id] = now + SURE * self.config.ttl
            for chat_id in done:
                self._sure_until.pop(chat_id, None)
        for chat_id in lost:
            # Another node took it over: this node was too slow to renew its lease, or cut
            # off from Redis longer than that. Its copy stops, unsaved: the file is theirs.
            self._lose(chat_id)
        self._adopt_orphans()

    def _adopt_orphans(self) -> None:
        if self._take_over is None or self.draining:
            return
        for chat_id, former in self.leases.orphans().items():
            if chat_id in self._taking or self.leases.take(chat_id) != self.node_id:
                continue  # another node was quicker
            self._hold(chat_id, RESERVED)
            self._taking.add(chat_id)
            log.warning("node %s takes over chat %s from node %s", self.node_id, chat_id,
                        former)  # fmt: skip
            threading.Thread(target=self._adopt, args=(chat_id, former), daemon=True,
                             name=f"cadre-takeover-{chat_id}").start()  # fmt: skip

    def _adopt(self, chat_id: str, former: str) -> None:
        try:
            assert self._take_over is not None
            self._take_over(chat_id, former)
        except Exception:
            log.exception("node %s could not take over chat %s", self.node_id, chat_id)
        finally:
            # Nothing runs here after it (the run had ended, it waits for its user, or it
            # could not be read): no reservation keeps the lease past the next heartbeat.
            if not self._runs_here(chat_id):
                self.ended(chat_id)
            self._taking.discard(chat_id)
