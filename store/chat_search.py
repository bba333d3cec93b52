"""Finding chats by a piece of text: in their name or in what was said in them.

Only what people read is searched: chat names, the user's messages and the
agents' answers (not tool output, thoughts or utility calls). A chat not
opened since the start is searched in its file, without loading it. Each chat
found comes with the words around the text in what was said (its snippet).
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
#: Characters of a snippet before and after the text found.
SNIPPET_AROUND = 40


def _said(items: Iterable[dict[str, Any]]) -> Iterable[str]:
    for item in items:
        if item.get("type") in SAID:
            yield str(item.get("content", ""))


def matches(name: str, texts: Iterable[str], query: str) -> bool:
    """Does the name or one of the texts hold `query` (case ignored)?"""
    needle = query.casefold()
    return needle in name.casefold() or any(needle in text.casefold() for text in texts)


def snippet(texts: Iterable[str], query: str) -> str | None:
    """The words around `query` in the first of `texts` that holds it (case ignored), on
    one line, "…" where it was cut; None when none holds it."""
    needle = query.lower()
    for text in texts:
        at = text.lower().find(needle)
        if at < 0:
            continue
        start, end = max(0, at - SNIPPET_AROUND), min(len(text), at + len(query) + SNIPPET_AROUND)
        part = " ".join(text[start:end].split())
        return ("…" if start else "") + part + ("…" if end < len(text) else "")
    return None


def search_chats(chats: ChatManager, query: str) -> list[str]:
    """Ids of the chats that hold `query`, newest first (as the chat list shows them)."""
    return [chat_id for chat_id, _ in find_chats(chats, query)]


def find_chats(chats: ChatManager, query: str, viewer: str | None = None) -> list[tuple[str, str]]:
    """(id, snippet) of `viewer`'s chats that hold `query`, newest first: the snippet shows
    the words around it in what was said, "" for a chat whose name holds it."""
    rows = chats.summaries(
        lambda c: {
            "id": c.id,
            "name": c.name,
            "created_at": c.created_at,
            "last_message": c.last_message,
        },  # fmt: skip
        viewer,
    )
    found = []
    for row in rows:
        words = _chat_match(chats, row["id"], row["name"], query)
        if words is not None:
            found.append((row["id"], words))
    return found


def _chat_match(chats: ChatManager, chat_id: str, name: str, query: str) -> str | None:
    if matches(name, (), query):
        return ""
    context = chats.registry.get(chat_id)
    if context is not None:  # the log is safe to read from this thread
        return snippet(_said(context.log.to_list()), query)
    try:
        chat = persist_chat.read_chat(chat_id)
    except (OSError, ValueError) as exc:  # damaged or deleted meanwhile: not a match
        log.debug("chat %s not searched: %s", chat_id, exc)
        return None
    return snippet(_said(chat.log.get("items", [])), query)
