"""The registry of open chats, an object the server owns (no class-level global)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.chat import Chat


class ContextRegistry:
    """Chats by id. Safe to use from web threads and the agents' loop."""

    def __init__(self) -> None:
        self._contexts: dict[str, Chat] = {}
        self._lock = threading.Lock()

    def add(self, context: Chat) -> Chat:
        with self._lock:
            self._contexts[context.id] = context
        return context

    def get(self, context_id: str) -> Chat | None:
        with self._lock:
            return self._contexts.get(context_id)

    def remove(self, context_id: str) -> Chat | None:
        with self._lock:
            return self._contexts.pop(context_id, None)

    def all(self) -> list[Chat]:
        """Every chat, oldest first."""
        with self._lock:
            contexts = list(self._contexts.values())
        return sorted(contexts, key=lambda c: c.created_at)

    def __len__(self) -> int:
        with self._lock:
            return len(self._contexts)
