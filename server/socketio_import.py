"""Flask-SocketIO, imported without what python-socketio imports for parts Cadre does not
use: every module of Cadre's takes it from here.

python-socketio imports its clients and its message queues' managers whatever a program
uses, each with its library when that is installed: its client for asyncio imports
aiohttp (litellm installs it), and its Redis managers import redis-py (Cadre installs it
for cluster mode). About a fifth of Cadre's start-up went to aiohttp and its
dependencies, for a client Cadre never makes, and a process alone has no use for Redis.
So the import is made with both held back (an import of either fails for that moment, as
where it is not installed, and python-socketio goes without); right after, they may be
imported again (litellm imports aiohttp, later, in a thread of its own). A node of a
cluster gives the Redis manager redis-py back before its server is made (`give_redis`).
"""

from __future__ import annotations

import sys
import threading

#: What python-socketio's import would take and Cadre does without until it needs it.
HELD_BACK = ("aiohttp", "redis")

_lock = threading.Lock()

with _lock:
    _held = [name for name in HELD_BACK if name not in sys.modules]
    for _name in _held:
        sys.modules[_name] = None  # type: ignore[assignment]  # "not installed", a moment
    try:
        from flask_socketio import SocketIO, join_room, leave_room
    finally:
        for _name in _held:
            sys.modules.pop(_name, None)


def give_redis() -> None:
    """Hand redis-py to python-socketio's Redis manager, which took it for missing at import
    (above): Flask-SocketIO's `message_queue` uses that manager. For a node of a cluster
    alone (cluster/), before its SocketIO is made."""
    import redis
    from socketio import redis_manager

    if redis_manager.redis is None:
        redis_manager.redis = redis
        redis_manager.RedisError = redis.exceptions.RedisError


__all__ = ["SocketIO", "give_redis", "join_room", "leave_room"]
