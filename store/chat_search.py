"""Finding chats by a piece of text: in their name or in what was said in them.

Only what people read is searched: chat names, the user's messages and the
agents' answers (not tool output, thoughts or utility calls). A chat not
opened since the start is searched in its file, without loading it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from store import persist_chat

if TYPE_CHECKING:
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Log kinds whose text counts as "what was said".
SAID = frozenset({"user", "response"})


def _said(items: Iterable[dict[str, Any]]) -> Iterable[str]:
    for item in items:
        if item.get("type") in SAID:
            yield str(item.get("content", ""))


def matches(name: str, texts: Iterable[str], query: str) -> bool:
    """Does the name or one of the texts hold `query` (case ignored)?"""
    needle = query.casefold()
    return needle in name.casefold() or any(needle in text.casefold() for text in texts)


def search_chats(chats: ChatManager, query: str) -> list[str]:
    """Ids of the chats that hold `query`, newest first (as the chat list shows them)."""
    rows = chats.summaries(
        lambda c: {
            "id": c.id,
            "name": c.name,
            "created_at": c.created_at,
            "last_message": c.last_message,
        }  # fmt: skip
    )
    found = []
    for row in rows:
        if _chat_matches(chats, row["id"], row["name"], query):
            found.append(row["id"])
    return found


def _chat_matches(chats: ChatManager, chat_id: str, name: str, query: str) -> bool:
    if matches(name, (), query):
        return True
    context = chats.registry.get(chat_id)
    if context is not None:  # the log is safe to read from this thread
        return matches("", _said(context.log.to_list()), query)
    try:
        chat = persist_chat.read_chat(chat_id)
    except (OSError, ValueError) as exc:  # damaged or deleted meanwhile: not a match
        log.debug("chat %s not searched: %s", chat_id, exc)
        return False
    return matches("", _said(chat.log.get("items", [])), query)
