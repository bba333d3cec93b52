"""Which Cadre chats each Telegram chat has, and which of them it talks to now:
usr/telegram/chats.json, read at each use and written whole (atomically), so a restart (or
another node of a cluster) finds it as it was left.

{"version": 1, "chats": {"<telegram chat id>": {"current": "<chat id>", "chats": [...]}}}
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from helpers.files import usr_path
from helpers.kept_map import KeptMap, Locker

#: Where the map is kept, under usr/.
FILE = "telegram/chats.json"
#: What an unreadable map costs (helpers/kept_map.py says it in the log).
LOST = "Telegram chats start new Cadre chats"


class ChatMap:
    """Telegram chat id → its Cadre chats (oldest first) and the current one."""

    def __init__(self, path: Path | None = None, lock: Locker | None = None) -> None:
        self.path = path or usr_path(FILE)
        self._map = KeptMap(self.path, "chats", LOST, lock)

    def current(self, telegram_chat: int) -> str | None:
        return self._map.read().get(str(telegram_chat), {}).get("current")

    def chats(self, telegram_chat: int) -> list[str]:
        return self.chats_of([telegram_chat])[telegram_chat]

    def chats_of(self, telegram_chats: Iterable[int]) -> dict[int, list[str]]:
        """The Cadre chats of each of `telegram_chats`, from one read of the map."""
        read = self._map.read()
        return {c: list(read.get(str(c), {}).get("chats", [])) for c in telegram_chats}

    def telegram_chats_of(self, chat_id: str) -> list[int]:
        """The Telegram chats that hold the Cadre chat `chat_id` (its answers go there)."""
        return [
            int(key) for key, entry in self._map.read().items() if chat_id in entry.get("chats", [])
        ]

    def use(self, telegram_chat: int, chat_id: str) -> None:
        """Talk to `chat_id` from now on (added to the Telegram chat's list if new)."""

        def change(data: dict) -> None:
            entry = data.setdefault(str(telegram_chat), {"current": None, "chats": []})
            if chat_id not in entry["chats"]:
                entry["chats"].append(chat_id)
            entry["current"] = chat_id

        self._map.change(change)

    def forget(self, chat_id: str) -> None:
        """A Cadre chat that is gone (deleted): out of every list."""

        def change(data: dict) -> None:
            for entry in data.values():
                if chat_id in entry.get("chats", []):
                    entry["chats"].remove(chat_id)
                    if entry.get("current") == chat_id:
                        entry["current"] = entry["chats"][-1] if entry["chats"] else None

        self._map.change(change)
