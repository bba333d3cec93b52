"""A deleted account's chats: handed over to another user, or deleted with it.

Their runs are stopped first (a chat must not go on working for nobody, nor start
working in its new owner's folders halfway through a step).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from store.chats import ChatManager

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)


def hand_over_chats(chats: ChatManager, owner: str, heir: str | None) -> int:
    """Give every chat of `owner` to `heir`, or delete them (None); how many there were."""
    ids = chats.ids_of(owner)
    for chat_id in ids:
        if heir is None:
            chats.delete(chat_id)
            continue
        context = chats.get(chat_id)
        chats.runtime.submit(_halted(context)).result(30)
        context.owner = chats.recorded(heir)
        chats.save_now(context)
    log.info("accounts: %d chat(s) of %r %s", len(ids), owner,
             f"handed over to {heir!r}" if heir else "deleted")  # fmt: skip
    return len(ids)


async def _halted(context: Chat) -> None:
    """Stop the chat's run, if any, and wait until it has unwound (on the agents' loop)."""
    task = context.task
    if task is not None and not task.done():
        context.stop()
        await asyncio.wait({task}, timeout=10)
