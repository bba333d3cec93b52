"""Which Cadre chat each A2A context is, per owner: usr/a2a/contexts.json
(helpers/kept_map.py), so a follow-up in the same context goes on in the same chat after a
restart, or on another node of a cluster.

`{"version": 1, "contexts": {<key>: {"chat": "<chat id>", "at": <time>}}}`, the key the
JSON of `[owner, contextId]` (the desktop mode's one person is owner ""). Past KEPT
contexts the least recently started ones are forgotten (a chat's own id, sent as the
contextId, still continues it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers.files import usr_path
from helpers.kept_map import KeptMap, Locker

#: Where the map is kept, under usr/.
FILE = "a2a/contexts.json"
#: Contexts remembered; past it the oldest go.
KEPT = 10_000
#: What an unreadable map costs (the log says it).
LOST = "A2A follow-ups start new chats"


def _key(owner: str | None, context_id: str) -> str:
    return json.dumps([owner or "", context_id])  # no owner and context run into another


class ContextMap:
    """(owner, contextId) → the chat it is."""

    def __init__(self, path: Path | None = None, lock: Locker | None = None,
                 kept: int = KEPT) -> None:  # fmt: skip
        self._map = KeptMap(path or usr_path(FILE), "contexts", LOST, lock)
        self.kept = kept

    def chat_of(self, owner: str | None, context_id: str) -> str | None:
        entry = self._map.read().get(_key(owner, context_id))
        chat = entry.get("chat") if isinstance(entry, dict) else None
        return chat if isinstance(chat, str) else None

    def remember(self, owner: str | None, context_id: str, chat_id: str) -> None:
        """The context is that chat from now on (written only when that is news)."""
        key = _key(owner, context_id)

        def change(data: dict) -> bool:
            entry = data.get(key)
            if isinstance(entry, dict) and entry.get("chat") == chat_id:
                return False
            data[key] = {"chat": chat_id, "at": time.time()}
            if len(data) > self.kept:  # the least recently started contexts are forgotten
                ordered = sorted(data, key=lambda k: _at(data[k]))
                for old in ordered[: len(data) - self.kept]:
                    del data[old]
            return True

        self._map.change(change)

    def hand_over(self, name: str, heir: str | None) -> None:
        """A deleted account's contexts: its heir's (who gets its chats), else forgotten."""

        def change(data: dict) -> bool:
            changed = False
            for key in list(data):
                owner, context_id = json.loads(key)
                if owner == name:
                    entry = data.pop(key)
                    changed = True
                    if heir is not None:
                        data.setdefault(_key(heir, context_id), entry)
            return changed

        self._map.change(change)


def _at(entry: object) -> float:
    at = entry.get("at") if isinstance(entry, dict) else None
    return float(at) if isinstance(at, int | float) else 0.0
