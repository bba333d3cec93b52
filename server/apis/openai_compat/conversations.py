"""Which chat continues a conversation of the OpenAI-compatible endpoint.

OpenAI clients send the whole conversation with every request and no chat
id. After each answer the endpoint records the conversation as it now stands
(its messages and the answer, hashed: server/apis/openai_compat/wire.py
`conversation_key`) against the chat that answered; a later request whose
earlier messages hash the same continues that chat. The index is a small
JSON file under `usr/`, written atomically, so it survives restarts; it keeps
the newest `KEEP` conversations.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from helpers.files import usr_path, write_text_atomic

log = logging.getLogger(__name__)

#: Conversations remembered; the oldest are forgotten first.
KEEP = 2000
VERSION = 1


def index_path() -> Path:
    return usr_path("openai_conversations.json")


class ConversationIndex:
    """Conversation key → chat id, kept on disk (one per process, shared by its threads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._chats: dict[str, str] | None = None  # read on first use

    def _load(self) -> dict[str, str]:
        if self._chats is None:
            self._chats = {}
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                chats = data.get("chats", {}) if isinstance(data, dict) else {}
                self._chats = {str(k): str(v) for k, v in chats.items()}
            except FileNotFoundError:
                pass
            except (OSError, ValueError, AttributeError, RecursionError) as exc:
                # A damaged index only costs continuations: those conversations start anew
                # (a 100k-deep one, which a restore may bring, as any other).
                log.warning("ignoring the damaged conversation index %s: %s", self.path, exc)
        return self._chats

    def find(self, key: str) -> str | None:
        with self._lock:
            return self._load().get(key)

    def remember(self, key: str, chat_id: str) -> None:
        with self._lock:
            chats = self._load()
            chats.pop(key, None)  # re-inserted as the newest
            chats[key] = chat_id
            while len(chats) > KEEP:
                chats.pop(next(iter(chats)))
            text = json.dumps({"version": VERSION, "chats": chats}, indent=0)
            # No disk flush: a crash of the machine that empties the file costs only the
            # continuations (those conversations start anew), not a flush per answer.
            write_text_atomic(self.path, text, fsync=False)
