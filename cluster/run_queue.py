"""The run queue: which node takes the next run, decided by the nodes that have room.

A node asked to start a run that no node holds (a message to an idle chat, or to a new
one) offers it here instead of starting it itself: it adds an entry to the Redis stream
`cadre:queue` and waits for the answer on a list of its own. Every node reads the stream
through one consumer group, one entry at a time, and only while it runs fewer chats than
its limit; a node that runs more waits a little longer before it reads, so the least busy
node is the one that reads first, and a busy node is not given more. The node that reads
an entry takes the chat's lease (cluster/leases.py) and answers with its own name (or
with the name of the node that held the lease already); the asker then hands the request
to that node (server/cluster/relay.py), which starts the run as any other.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable

import redis

from cluster.leases import Leases

log = logging.getLogger(__name__)

QUEUE_KEY = "cadre:queue"
GROUP = "nodes"
REPLY_PREFIX = "cadre:reply:"
#: node → how many runs it took from the queue (since Redis last started).
TAKEN_KEY = "cadre:taken"
#: Entries kept in the stream (approximately): it is a hand-over, not a history.
KEEP = 10_000
#: Seconds an asker waits for a node to take its run before it says none has room.
OFFER_WAIT = 5.0
#: Seconds a node blocks on the stream at a time (it looks at its own state between).
READ_BLOCK = 1.0
#: Seconds a node waits before each read for each run it has: the least busy reads first.
DELAY_PER_RUN = 0.02
#: An entry with no chat yet: the request makes one, on the node that takes it.
NEW_CHAT = "-"


class NoRoom(Exception):  # noqa: N818 - what the asker meets, said in words
    """No node took the run in time: every node is full, or none reads the queue."""


class RunQueue:
    """The queue as one node sees it: offering runs, and taking them while it has room."""

    def __init__(self, client: redis.Redis, blocking: redis.Redis, leases: Leases,
                 node_id: str) -> None:  # fmt: skip
        #: `blocking` is a client whose answers may take READ_BLOCK and OFFER_WAIT seconds.
        self.client = client
        self.blocking = blocking
        self.leases = leases
        self.node_id = node_id
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def ensure_group(self) -> None:
        try:
            # From the start of the stream: a group made again after Redis lost it (restarted
            # without its data) reads what askers added meanwhile.
            self.client.xgroup_create(QUEUE_KEY, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):  # made by another node already: fine
                raise

    # -- asking ----------------------------------------------------------------------

    def offer(self, chat_id: str | None, wait: float = OFFER_WAIT) -> str:
        """The node that takes the run of `chat_id` (None: a chat the request will make);
        NoRoom when none did within `wait` seconds."""
        reply = REPLY_PREFIX + uuid.uuid4().hex
        self.client.xadd(QUEUE_KEY, {"chat": chat_id or NEW_CHAT, "reply": reply,
                                     "from": self.node_id},
                         maxlen=KEEP, approximate=True)  # fmt: skip
        answer = self.blocking.blpop([reply], timeout=wait)
        if answer is None:
            raise NoRoom(f"no node took the run within {wait:g} s")
        return str(answer[1])

    # -- taking ----------------------------------------------------------------------

    def start(self, runs: Callable[[], int], limit: int,
              taken: Callable[[str | None], None]) -> None:  # fmt: skip
        """Take runs from the queue on a thread of its own while this node runs fewer
        than `limit` chats (`runs` counts them); `taken(chat_id)` is told of each chat
        whose lease this node took for a run it is about to be sent, `taken(None)` of each
        new chat's run (no lease yet: the chat is made as its request comes)."""
        self.ensure_group()
        self._thread = threading.Thread(target=self._taking, args=(runs, limit, taken),
                                        name="cadre-run-queue", daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        """Take no more runs (draining, or the end)."""
        self._stopping.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(READ_BLOCK + 3)

    def _taking(self, runs: Callable[[], int], limit: int,
                taken: Callable[[str | None], None]) -> None:  # fmt: skip
        failing = False
        while not self._stopping.is_set():
            busy = runs()
            if busy >= limit:
                self._stopping.wait(0.2)
                continue
            if busy and self._stopping.wait(busy * DELAY_PER_RUN):
                return
            try:
                self._take_one(taken)
                if failing:
                    log.info("node %s takes runs from the queue again", self.node_id)
                failing = False
            except redis.RedisError as exc:
                if not failing:
                    log.error("node %s cannot read the run queue (%s): it tries again every"
                              " second", self.node_id, exc)  # fmt: skip
                failing = True
                self._stopping.wait(1.0)
                if "NOGROUP" in str(exc):  # Redis came back empty (restarted): made again
                    with contextlib.suppress(redis.RedisError):
                        self.ensure_group()
            except Exception:  # one bad entry must not end the taking
                log.exception("node %s: taking a run from the queue failed", self.node_id)
                self._stopping.wait(0.2)

    def _take_one(self, taken: Callable[[str | None], None]) -> None:
        found = self.blocking.xreadgroup(GROUP, self.node_id, {QUEUE_KEY: ">"}, count=1,
                                         block=int(READ_BLOCK * 1000))  # fmt: skip
        for _stream, entries in found or []:
            for entry_id, fields in entries:
                self._answer(fields, taken)
                self.client.xack(QUEUE_KEY, GROUP, entry_id)

    def _answer(self, fields: dict[str, str], taken: Callable[[str | None], None]) -> None:
        chat_id, reply = fields.get("chat", NEW_CHAT), fields.get("reply", "")
        holder = self.node_id
        if chat_id != NEW_CHAT:
            holder = self.leases.take(chat_id)
        if holder == self.node_id:
            taken(None if chat_id == NEW_CHAT else chat_id)
        pipe = self.client.pipeline()
        if reply:
            pipe.rpush(reply, holder)
            pipe.expire(reply, int(OFFER_WAIT * 4))
        pipe.hincrby(TAKEN_KEY, holder, 1)  # the cluster view's count of runs taken
        pipe.execute()
