"""Names a chat after its first exchange (Cadre's own feature, as a shipped plugin).

Naming a chat is a free-text utility call. Unbounded, it held a local model's only slot
for 64-110 s while the user waited for the next answer, and it replaced the chat's prompt
in llama.cpp's cache. So the call is capped at a few tokens, and with a local utility
model there is no call at all: the first words of the user's first message name the chat,
at once.

The chat is named once a save shows its first exchange (the `ChatSaved` run event), in
a task of the chat's own: the handler itself returns at once, well within its time budget
(core/plugin_handlers.py), whatever the utility model takes. When Cadre lets go of the
chat (`ChatClosed`: deleted, reset, handed over, restored over, taken over by another
node) the naming stops; a chat made again from its record is another object, named anew.
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from typing import TYPE_CHECKING

from helpers.chat_names import clean_name
from helpers.errors import CadreError

if TYPE_CHECKING:
    from core.chat import Chat
    from core.events import ChatClosed, ChatSaved
    from models.llm import ModelConfig

log = logging.getLogger("cadre.plugins.chat_naming")

#: Most tokens a naming call may write (a name is two to six words).
NAME_TOKENS = 24
#: Words of the first message that make a name.
NAME_WORDS = 6
#: The naming going on for each chat: a save meanwhile starts no second one.
_naming: weakref.WeakKeyDictionary[Chat, asyncio.Future[None]] = weakref.WeakKeyDictionary()


async def on_chat_saved(event: ChatSaved, chat: Chat) -> None:
    """Name `chat` once its first exchange is there, if it has no name yet."""
    if chat.name or chat in _naming:
        return
    local = not uses_model(chat.agent0.ctx.util_model)
    first = _first_exchange(chat, wait_for_answer=not local)
    if first is not None:
        _naming[chat] = chat.events.spawn(_name(chat, *first))


async def on_chat_closed(event: ChatClosed, chat: Chat) -> None:
    """Cadre lets go of `chat`: its naming stops (no utility call for a chat gone)."""
    naming = _naming.pop(chat, None)
    if naming is not None:
        naming.cancel()


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


def _first_exchange(chat: Chat, wait_for_answer: bool) -> tuple[str, str] | None:
    """The first user message and Agent 0's answer, once there is one and the run ended
    (without `wait_for_answer`: the message alone, at once)."""
    question = next((i.content for i in chat.log.items if i.type == "user"), None)
    if not wait_for_answer:
        return (question[:2000], "") if question else None
    if chat.running:
        return None
    answer = next(
        (
            i.content
            for i in chat.log.items
            if i.type == "response" and i.agentno == 0 and "status" not in i.kvps
        ),
        None,
    )
    return (question[:2000], answer[:2000]) if question and answer else None


async def _name(chat: Chat, question: str, answer: str) -> None:
    agent0 = chat.agent0.ctx
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
        log.warning("chat %s: no name from the utility model: %s", chat.id, exc)
        return
    finally:
        _naming.pop(chat, None)
    name = clean_name(name.strip().strip("\"'`*#"))
    if name and not chat.name:
        chat.name = name
        await chat.save()
