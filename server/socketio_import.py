"""Flask-SocketIO, imported without python-socketio's HTTP clients' own imports: every
module of Cadre's takes it from here.

python-socketio imports its clients whatever a program uses, and their client for
asyncio imports aiohttp when it is installed (litellm installs it): about a fifth
of Cadre's start-up went to aiohttp and its dependencies, for a client Cadre
never makes. Here the import is made with aiohttp held back (an import of it
fails for that moment, as where it is not installed, and python-socketio's
asyncio client then goes without); right after, aiohttp may be imported again
(litellm imports it, later, in a thread of its own).
"""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()

with _lock:
    _held = "aiohttp" not in sys.modules
    if _held:
        sys.modules["aiohttp"] = None  # type: ignore[assignment]  # "not installed", a moment
    try:
        from flask_socketio import SocketIO, join_room, leave_room
    finally:
        if _held:
            sys.modules.pop("aiohttp", None)

__all__ = ["SocketIO", "join_room", "leave_room"]
