"""Login sessions in Redis: every node of a cluster knows each login, and each end at once.

Keys, in the database of CADRE_REDIS_URL:

- `cadre:session:<key>` holds a session's record as JSON (`{"started", "stamp", "user"}`),
  and expires `MAX_AGE` after its login (`PXAT`): a node asks for it at each request and
  each Socket.IO event of a page, so an ended session is refused on every node at the
  next one.
- `cadre:sessions:<user>` is the index of a person's sessions (a sorted set of their keys
  by login time): what ends them all (a password changed, an account disabled) and what
  keeps each person to `MAX_SESSIONS`. Members past `MAX_AGE` are dropped as it is read.

An end is published on the channel `cadre:<db>:sessions` (`{"from": <book>, "keys":
[...]}`; publish/subscribe ignores databases, as for Socket.IO's channel): each node
closes its own pages' sockets of those sessions. A node hears the channel on a thread of
its own with a connection of its own. When it could not hear for a while (Redis away, the
connection cut), it may have missed ends: once it hears again, it asks the server to look
again at the sessions of its sockets (`missed`).

When Redis does not answer, each call raises `ClusterUnavailable` in plain words: no
session is taken for live (the page gets a 503 that says why), none is ended.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import asdict, replace
from urllib.parse import urlsplit

import redis

from cluster.config import ClusterConfig
from cluster.node import ClusterUnavailable
from cluster.sessions import MAX_AGE, MAX_SESSIONS, Ended, SessionRecord

log = logging.getLogger(__name__)

SESSION_PREFIX = "cadre:session:"
USER_PREFIX = "cadre:sessions:"
#: Seconds the listener waits for a message at a time (it looks at its stop between).
LISTEN_WAIT = 1.0


def sessions_channel(redis_url: str) -> str:
    """The channel of this cluster's ended sessions (one per database, as Socket.IO's)."""
    database = urlsplit(redis_url).path.strip("/") or "0"
    return f"cadre:{database}:sessions"


def _record(text: str | None) -> SessionRecord | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
        return SessionRecord(float(data["started"]), str(data["stamp"]), str(data["user"]))
    except (ValueError, TypeError, KeyError) as exc:
        log.warning("a session's record in Redis is not one Cadre reads (%s): taken as ended",
                    exc)  # fmt: skip
        return None


class RedisSessions:
    """The cluster's sessions (cluster/sessions.py `SessionBook`), through `client`."""

    def __init__(self, client: redis.Redis, config: ClusterConfig) -> None:
        self.client = client
        self.config = config
        self.channel = sessions_channel(config.redis_url)
        #: This book's name on the channel: what it published, it told its listeners.
        self._me = uuid.uuid4().hex
        self._ended: Ended = lambda keys: None
        self._missed: Callable[[], None] = lambda: None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: Whether the listener lost Redis (said once, and once when it hears again).
        self._away = False

    # -- the records -------------------------------------------------------------------

    def add(self, key: str, record: SessionRecord) -> set[str]:
        index = USER_PREFIX + record.user
        try:
            pipe = self.client.pipeline(transaction=True)
            pipe.set(SESSION_PREFIX + key, json.dumps(asdict(record)),
                     pxat=int((record.started + MAX_AGE) * 1000))  # fmt: skip
            pipe.zadd(index, {key: record.started})
            pipe.zremrangebyscore(index, "-inf", f"({record.started - MAX_AGE}")
            pipe.expire(index, int(MAX_AGE))
            pipe.zcard(index)
            count = pipe.execute()[-1]
            extra = int(count) - MAX_SESSIONS
            oldest = self.client.zrange(index, 0, extra - 1) if extra > 0 else []
        except redis.RedisError as exc:
            raise self._unavailable(exc, "the login cannot be kept") from None
        return self.remove(oldest) if oldest else set()

    def get(self, key: str) -> SessionRecord | None:
        try:
            text = self.client.get(SESSION_PREFIX + key)
        except redis.RedisError as exc:
            raise self._unavailable(exc, "whether you are logged in cannot be known") from None
        return _record(text)

    def restamp(self, key: str, stamp: str, user: str) -> bool:
        try:
            found = _record(self.client.get(SESSION_PREFIX + key))
            if found is None:
                return False
            changed = replace(found, stamp=stamp, user=user)
            pipe = self.client.pipeline(transaction=True)
            pipe.set(SESSION_PREFIX + key, json.dumps(asdict(changed)), xx=True, keepttl=True)
            if found.user != user:  # the first admin renamed: the session moves to the name
                pipe.zrem(USER_PREFIX + found.user, key)
                pipe.zadd(USER_PREFIX + user, {key: found.started})
                pipe.expire(USER_PREFIX + user, int(MAX_AGE))
            kept = pipe.execute()[0]
        except redis.RedisError as exc:
            raise self._unavailable(exc, "the session cannot be kept") from None
        return bool(kept)

    def keys_of(self, users: Collection[str]) -> set[str]:
        names = sorted(users)
        try:
            pipe = self.client.pipeline(transaction=False)
            for name in names:
                pipe.zremrangebyscore(USER_PREFIX + name, "-inf", f"({time.time() - MAX_AGE}")
                pipe.zrange(USER_PREFIX + name, 0, -1)
            found = pipe.execute()
        except redis.RedisError as exc:
            raise self._unavailable(exc, "the sessions cannot be listed") from None
        return {key for members in found[1::2] for key in members}

    def remove(self, keys: Collection[str]) -> set[str]:
        wanted = sorted(keys)
        if not wanted:
            return set()
        try:
            records = [_record(text) for text in
                       self.client.mget([SESSION_PREFIX + key for key in wanted])]  # fmt: skip
            live = [key for key, record in zip(wanted, records, strict=True) if record]
            pipe = self.client.pipeline(transaction=True)
            for key in wanted:
                pipe.delete(SESSION_PREFIX + key)
            for key, record in zip(wanted, records, strict=True):
                if record is not None:
                    pipe.zrem(USER_PREFIX + record.user, key)
            if live:  # the other nodes close their sockets of these (a gone one: nothing)
                pipe.publish(self.channel, json.dumps({"from": self._me, "keys": live}))
            deleted = pipe.execute()[: len(wanted)]
        except redis.RedisError as exc:
            raise self._unavailable(exc, "the session cannot be ended") from None
        return {key for key, count in zip(wanted, deleted, strict=True) if count}

    # -- hearing other nodes' ends -----------------------------------------------------

    def listen(self, ended: Ended, missed: Callable[[], None]) -> None:
        self._ended, self._missed = ended, missed
        if self._thread is None:
            self._thread = threading.Thread(target=self._listening, name="cadre-sessions",
                                            daemon=True)  # fmt: skip
            self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread.is_alive():
            # A message of no keys wakes the listener (the others ignore it) so that it sees
            # the stop at once rather than at the end of its wait.
            with contextlib.suppress(redis.RedisError):
                self.client.publish(self.channel, json.dumps({"from": self._me, "keys": []}))
            self._thread.join(LISTEN_WAIT + 3)

    def _listening(self) -> None:
        while not self._stopping.is_set():
            pubsub = self.client.pubsub()
            try:
                pubsub.subscribe(self.channel)
                while not self._stopping.is_set():
                    message = pubsub.get_message(timeout=LISTEN_WAIT)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":  # at first, and after a reconnection
                        self._hearing()
                    elif message["type"] == "message":
                        self._heard(message["data"])
            except redis.RedisError as exc:
                if not self._away:
                    log.error("node %s does not hear the cluster's ended sessions (Redis at %s:"
                              " %s): it tries again every second", self.config.node_id,
                              self.config.redis_address(), exc)  # fmt: skip
                self._away = True
                self._stopping.wait(1.0)
            finally:
                with contextlib.suppress(redis.RedisError):
                    pubsub.close()

    def _hearing(self) -> None:
        """Subscribed (again): ends published meanwhile were not heard; look again."""
        if self._away:
            log.info("node %s hears the cluster's ended sessions again", self.config.node_id)
        self._away = False
        self._missed()

    def _heard(self, text: str) -> None:
        try:
            news = json.loads(text)
            keys = {str(key) for key in news["keys"]}
            mine = news.get("from") == self._me
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("a message on %s is not one Cadre reads (%s)", self.channel, exc)
            return
        if keys and not mine:  # this book told its own listeners as it ended them
            self._ended(keys)

    def _unavailable(self, exc: redis.RedisError, what: str) -> ClusterUnavailable:
        return ClusterUnavailable(
            f"Redis at {self.config.redis_address()} does not answer ({exc}): {what} now."
            " Check that Redis runs and that this node reaches it"
        )
