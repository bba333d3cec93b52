"""Cluster mode's switch and this node's name, read from the environment once, at start.

They are no settings of usr/settings.json: every node reads that one file, so a node's
name there would be every node's, and the Redis address decides how a process starts
(its Socket.IO server is made with it), which a page's form could not change live.

    CADRE_REDIS_URL   redis://[:password@]host:port/db (rediss:// for TLS); empty: one
                      process, no Redis (the default)
    CADRE_NODE_ID     this node's name; empty: <host name>-<pid>
    CADRE_NODE_TTL    seconds a node's heartbeat lives in Redis (renewed every third of
                      it): how soon a node that died without a word leaves the list
    CADRE_NODE_RUNS   the most runs a node takes from the run queue at once
    CADRE_DRAIN_GRACE seconds a node told to stop (SIGTERM) lets its running chats go on
                      before it hands them to other nodes
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from helpers.errors import UserError

REDIS_URL_ENV = "CADRE_REDIS_URL"
NODE_ID_ENV = "CADRE_NODE_ID"
NODE_TTL_ENV = "CADRE_NODE_TTL"
NODE_RUNS_ENV = "CADRE_NODE_RUNS"
DRAIN_GRACE_ENV = "CADRE_DRAIN_GRACE"
#: What Flask-SocketIO hands to its Redis manager (python-socketio's RedisManager): any
#: other scheme would go to kombu, which Cadre does not install.
SCHEMES = ("redis", "rediss")
#: Seconds a heartbeat lives; the issue's target is a dead node's chats taken over
#: within 15 s, so it is seen as gone well before.
DEFAULT_TTL = 10.0
TTL_RANGE = (1.0, 3600.0)
DEFAULT_RUNS = 32
RUNS_RANGE = (1, 10_000)
#: Seconds of a stop's grace: gunicorn's arbiter waits this long more for the worker.
DEFAULT_GRACE = 30.0
GRACE_RANGE = (0.0, 3600.0)
#: A node's name: what a host name may hold, and a few marks (no spaces, no `*`: it is
#: part of a Redis key that nodes list by pattern).
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}")


def default_node_id() -> str:
    """<host name>-<pid>: unique on one machine and among machines with distinct names."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class ClusterConfig:
    #: The Redis server's address; "" is one process alone (no Redis at all).
    redis_url: str = ""
    node_id: str = field(default_factory=default_node_id)
    #: Seconds this node's heartbeat lives in Redis unless renewed.
    ttl: float = DEFAULT_TTL
    #: The most runs this node takes from the run queue at once.
    max_runs: int = DEFAULT_RUNS
    #: Seconds a stopping node lets its runs go on before it hands them over.
    drain_grace: float = DEFAULT_GRACE

    @property
    def enabled(self) -> bool:
        return bool(self.redis_url)

    @property
    def beat(self) -> float:
        """Seconds between two heartbeats: three chances before the record expires."""
        return self.ttl / 3

    def secrets(self) -> list[str]:
        """What the server's log must never show: Redis's password, and the URL that holds
        it (a URL without one is no secret: the log names it)."""
        password = urlsplit(self.redis_url).password
        return [self.redis_url, password] if password else []

    def redis_port(self) -> int | None:
        return urlsplit(self.redis_url).port or (6379 if self.enabled else None)

    def redis_address(self) -> str:
        """Where Redis is, for the log and for people: never its password."""
        parts = urlsplit(self.redis_url)
        where = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{where}{port}{parts.path or ''}"


def cluster_config(environ: Mapping[str, str] = os.environ) -> ClusterConfig:
    """This process's cluster settings; a UserError in plain words when one is wrong."""
    url = environ.get(REDIS_URL_ENV, "").strip()
    if url:
        _check_url(url)
    node_id = environ.get(NODE_ID_ENV, "").strip() or default_node_id()
    if not NODE_NAME.fullmatch(node_id):
        raise UserError(
            f"{NODE_ID_ENV}={node_id[:120]!r} is no node name: use letters, digits and"
            " . _ : @ - only, at most 100 characters, starting with a letter or digit"
            " (e.g. web-1)"
        )
    return ClusterConfig(
        url, node_id, _ttl(environ.get(NODE_TTL_ENV, "").strip()),
        int(_number(environ, NODE_RUNS_ENV, DEFAULT_RUNS, RUNS_RANGE, "runs at once")),
        _number(environ, DRAIN_GRACE_ENV, DEFAULT_GRACE, GRACE_RANGE,
                "seconds a stopping node lets its runs go on"),
    )  # fmt: skip


def _number(environ: Mapping[str, str], name: str, default: float,
            bounds: tuple[float, float], what: str) -> float:  # fmt: skip
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    low, high = bounds
    if not low <= value <= high:
        raise UserError(f"{name}={raw[:40]!r}: give the {what}, from {low:g} to {high:g}"
                        f" (default {default:g})")  # fmt: skip
    return value


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is no number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in SCHEMES or not parts.hostname:
        shown = url.split("@")[-1][:120]  # never a password, even in an error
        raise UserError(
            f"{REDIS_URL_ENV} ({shown!r}) is no Redis address: write"
            " redis://host:port/db, with :password@ before the host if Redis asks for one"
            " (rediss:// for TLS)"
        )


def _ttl(raw: str) -> float:
    if not raw:
        return DEFAULT_TTL
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    low, high = TTL_RANGE
    if not low <= seconds <= high:
        raise UserError(
            f"{NODE_TTL_ENV}={raw[:40]!r}: give the seconds a node's heartbeat lives, from"
            f" {low:g} to {high:g} (default {DEFAULT_TTL:g})"
        )
    return seconds
