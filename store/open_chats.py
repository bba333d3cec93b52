"""The registry of open chats, an object the server owns (no class-level global)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.chat import Chat


class OpenChats:
    """Chats by id. Safe to use from web threads and the agents' loop."""

    def __init__(self) -> None:
        self._chats: dict[str, Chat] = {}
        self._lock = threading.Lock()

    def add(self, chat: Chat) -> Chat:
        with self._lock:
            self._chats[chat.id] = chat
        return chat

    def get(self, chat_id: str) -> Chat | None:
        with self._lock:
            return self._chats.get(chat_id)

    def remove(self, chat_id: str) -> Chat | None:
        with self._lock:
            return self._chats.pop(chat_id, None)

    def all(self) -> list[Chat]:
        """Every chat, oldest first."""
        with self._lock:
            contexts = list(self._chats.values())
        return sorted(contexts, key=lambda c: c.created_at)

    def __len__(self) -> int:
        with self._lock:
            return len(self._chats)
