"""A chat's name: from the utility model, bounded, or from the first message alone.

Naming a chat is a free-text utility call. Unbounded, it held a local model's
only slot for 64-110 s while the user waited for the next answer, and it
replaced the chat's prompt in llama.cpp's cache. So the call is capped at a few
tokens, and with a local utility model there is no call at all: the first
words of the user's first message name the chat, at once.

`ChatNamer` does it: it listens for a chat's `ChatSaved` event (core/events.py)
and names a chat without a name once its first exchange is there.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from core.events import ChatSaved
from helpers.errors import CadreError
from helpers.valid_text import valid_text
from models.llm import ModelConfig

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from core.chat import Chat

log = logging.getLogger(__name__)

#: Longest chat name kept (names come from people and from a model).
NAME_LIMIT = 120
#: Most tokens a naming call may write (a name is two to six words).
NAME_TOKENS = 24
#: Words of the first message that make a name.
NAME_WORDS = 6


def uses_model(util_model: ModelConfig) -> bool:
    """Whether the name comes from a model call (not with a local model: see above)."""
    return util_model.local is None


def name_from_message(message: str) -> str:
    """A name of the first words of `message`: 'What is 17*23', 'Write a Python function that…'."""
    words = message.split()
    name = " ".join(words[:NAME_WORDS])
    name = re.sub(r"[\s.,;:!?]+$", "", name)
    if len(words) > NAME_WORDS:
        name += "…"
    return name[:1].upper() + name[1:]


def clean_name(name: str) -> str:
    """`name` as a chat's name: valid text on one line, at most NAME_LIMIT characters."""
    return " ".join(valid_text(name).split())[:NAME_LIMIT]


def _first_exchange(context: Chat, wait_for_answer: bool) -> tuple[str, str] | None:
    """The first user message and Agent 0's answer, once there is one and the run ended
    (without `wait_for_answer`: the message alone, at once)."""
    question = next((i.content for i in context.log.items if i.type == "user"), None)
    if not wait_for_answer:
        return (question[:2000], "") if question else None
    if context.running:
        return None
    answer = next(
        (
            i.content
            for i in context.log.items
            if i.type == "response" and i.agentno == 0 and "status" not in i.kvps
        ),
        None,
    )
    return (question[:2000], answer[:2000]) if question and answer else None


class ChatNamer:
    """Names chats after their first exchange; `save` writes a chat once it has its name."""

    def __init__(self, save: Callable[[Chat], Awaitable[None]]) -> None:
        self._save = save
        #: Chat id → the naming going on for it.
        self._naming: dict[str, asyncio.Future[None]] = {}

    def watch(self, context: Chat) -> None:
        """Name `context` when a save shows its first exchange (if it has no name yet)."""
        context.events.subscribe(ChatSaved, lambda _: self._on_saved(context))

    def cancel(self, chat_id: str) -> None:
        """The chat goes away: stop naming it."""
        naming = self._naming.pop(chat_id, None)
        if naming is not None:
            naming.cancel()

    def _on_saved(self, context: Chat) -> None:
        if context.name or context.id in self._naming:
            return
        util_model = context.agent0.ctx.util_model
        first = _first_exchange(context, wait_for_answer=uses_model(util_model))
        if first is not None:
            self._naming[context.id] = context.events.spawn(self._name(context, *first))

    async def _name(self, context: Chat, question: str, answer: str) -> None:
        agent0 = context.agent0.ctx
        try:
            if uses_model(agent0.util_model):
                name = await agent0.call_utility_model(
                    agent0.read_prompt("fw.chat_name.sys.md"),
                    agent0.read_prompt("fw.chat_name.msg.md", question=question, answer=answer),
                    heading="Naming the chat",
                    max_tokens=NAME_TOKENS,
                )
            else:
                name = name_from_message(question)
        except CadreError as exc:
            log.warning("chat %s: no name from the utility model: %s", context.id, exc)
            return
        finally:
            self._naming.pop(context.id, None)
        name = clean_name(name.strip().strip("\"'`*#"))
        if name and not context.name:
            context.name = name
            await self._save(context)
