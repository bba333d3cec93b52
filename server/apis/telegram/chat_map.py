"""Which Cadre chats each Telegram chat has, and which of them it talks to now:
usr/telegram/chats.json, read at each use and written whole (atomically), so a restart (or
another node of a cluster) finds it as it was left.

{"version": 1, "chats": {"<telegram chat id>": {"current": "<chat id>", "chats": [...]}}}
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from helpers.files import usr_path, write_text_atomic

log = logging.getLogger(__name__)

VERSION = 1
#: Where the map is kept, under usr/.
FILE = "telegram/chats.json"

#: A lock around each change: the cluster's (several nodes share usr/), or this process's.
Locker = Callable[[], AbstractContextManager[Any]]


class ChatMap:
    """Telegram chat id → its Cadre chats (oldest first) and the current one."""

    def __init__(self, path: Path | None = None, lock: Locker | None = None) -> None:
        self.path = path or usr_path(FILE)
        own = threading.Lock()
        self._lock: Locker = lock or (lambda: own)

    def current(self, telegram_chat: int) -> str | None:
        return self._read().get(str(telegram_chat), {}).get("current")

    def chats(self, telegram_chat: int) -> list[str]:
        return list(self._read().get(str(telegram_chat), {}).get("chats", []))

    def telegram_chats_of(self, chat_id: str) -> list[int]:
        """The Telegram chats that hold the Cadre chat `chat_id` (its answers go there)."""
        return [
            int(key) for key, entry in self._read().items() if chat_id in entry.get("chats", [])
        ]

    def use(self, telegram_chat: int, chat_id: str) -> None:
        """Talk to `chat_id` from now on (added to the Telegram chat's list if new)."""
        with self._lock():
            data = self._read()
            entry = data.setdefault(str(telegram_chat), {"current": None, "chats": []})
            if chat_id not in entry["chats"]:
                entry["chats"].append(chat_id)
            entry["current"] = chat_id
            self._write(data)

    def forget(self, chat_id: str) -> None:
        """A Cadre chat that is gone (deleted): out of every list."""
        with self._lock():
            data = self._read()
            for entry in data.values():
                if chat_id in entry.get("chats", []):
                    entry["chats"].remove(chat_id)
                    if entry.get("current") == chat_id:
                        entry["current"] = entry["chats"][-1] if entry["chats"] else None
            self._write(data)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Losing the map loses no chat: each Telegram chat starts a new one.
            log.error("the Telegram chat map %s cannot be read (%s): Telegram chats start new"
                      " Cadre chats until it is repaired or removed", self.path, exc)  # fmt: skip
            return {}
        chats = data.get("chats") if isinstance(data, dict) else None
        return chats if isinstance(chats, dict) else {}

    def _write(self, chats: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": VERSION, "chats": chats}, indent=1, sort_keys=True)
        write_text_atomic(self.path, text + "\n", mode=0o600)
