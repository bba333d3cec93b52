"""A small map kept in a JSON file under usr/, read at each use and written whole
(atomically, 0600) under a lock, so a restart, or another node of a cluster sharing usr/,
finds it as it was left: which Cadre chats a Telegram chat has (server/apis/telegram/
chat_map.py), which chat an A2A context is (server/apis/a2a/contexts.py).

`{"version": 1, "<field>": {...}}`. A file that cannot be read is an empty map and a line
in the log saying what is lost meanwhile; the next change writes it anew.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from helpers.files import write_text_atomic

log = logging.getLogger(__name__)

VERSION = 1

#: A lock around each change: the cluster's (several nodes share usr/), or this process's.
Locker = Callable[[], AbstractContextManager[Any]]


class KeptMap:
    """The map in `path`, under `field`; `lost` says what an unreadable file costs."""

    def __init__(self, path: Path, field: str, lost: str, lock: Locker | None = None) -> None:
        self.path = path
        self.field = field
        self.lost = lost
        own = threading.Lock()
        self._lock: Locker = lock or (lambda: own)

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.error("%s cannot be read (%s): %s until it is repaired or removed",
                      self.path, exc, self.lost)  # fmt: skip
            return {}
        found = data.get(self.field) if isinstance(data, dict) else None
        return found if isinstance(found, dict) else {}

    def change(self, how: Callable[[dict[str, Any]], bool | None]) -> None:
        """Read, let `how` change the map (it returns False when it changed nothing), write."""
        with self._lock():
            data = self.read()
            if how(data) is False:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"version": VERSION, self.field: data}, indent=1, sort_keys=True)
            write_text_atomic(self.path, text + "\n", mode=0o600)
