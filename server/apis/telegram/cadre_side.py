"""The Cadre side of a Telegram chat: its current Cadre chat (made when there is none), a
message with its files handed to it through the path every API uses
(server/apis/agent_calls.py), and its list. Blocking (the chat store, the disk): the bridge
calls these in worker threads, never on its loop.

The chats are the first admin's (with accounts) or the desktop's: the owner of the
settings that hold the bot's token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.agent_types import UserMessage
from helpers.errors import NotFound
from server.apis import agent_calls
from server.apis.telegram.chat_map import ChatMap
from server.apis.telegram.watch import ChatWatch
from server.routes.attachments import attach

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

#: What a new chat is named until its first message names it.
NEW_NAME = "Telegram"


@dataclass(frozen=True)
class Listed:
    chat_id: str
    name: str
    current: bool
    running: bool


class CadreSide:
    """Telegram chat ids → Cadre chats, for one chat store."""

    def __init__(self, chats: ChatManager, chat_map: ChatMap, watch: ChatWatch) -> None:
        self.chats = chats
        self.map = chat_map
        self.watch = watch

    def current(self, telegram_chat: int) -> Chat | None:
        """The Cadre chat the Telegram chat talks to now (None: none yet, or it is gone)."""
        chat_id = self.map.current(telegram_chat)
        if chat_id is None:
            return None
        try:
            return self.chats.get(chat_id)
        except NotFound:
            self.map.forget(chat_id)  # deleted in the page: the next message starts another
            return None

    def new(self, telegram_chat: int) -> Chat:
        """A new Cadre chat for the Telegram chat, current from now on."""
        chat = agent_calls.new_chat(self.chats, None)
        self.map.use(telegram_chat, chat.id)
        self.watch.watch(chat)
        return chat

    def send(self, telegram_chat: int, text: str,
             files: list[tuple[str, bytes]] | None = None) -> Chat:  # fmt: skip
        """Hand `text` (with `files`: name and bytes, attached as the page attaches them) to
        the current chat: a run, or an intervention in the one going on. OverLimit and the
        other UserErrors say why nothing started."""
        chat = self.current(telegram_chat)
        if chat is None:
            chat = agent_calls.new_chat_to_run(self.chats, None)  # the run gate asked first
            self.map.use(telegram_chat, chat.id)
        self.watch.watch(chat)  # before the run starts: its start and end are heard
        message = UserMessage(text, attachments=attach(chat.id, files or []))
        agent_calls.send(self.chats, chat, message)
        return chat

    def listed(self, telegram_chat: int) -> list[Listed]:
        """The Telegram chat's Cadre chats, oldest first (those deleted since left out)."""
        current = self.map.current(telegram_chat)
        found = []
        for chat_id in self.map.chats(telegram_chat):
            try:
                chat = self.chats.get(chat_id)
            except NotFound:
                continue
            found.append(Listed(chat.id, chat.name or NEW_NAME, chat.id == current, chat.running))
        return found

    def switch(self, telegram_chat: int, chat_id: str) -> Chat | None:
        """Talk to `chat_id` from now on, if it is one of the Telegram chat's."""
        if chat_id not in self.map.chats(telegram_chat):
            return None
        try:
            chat = self.chats.get(chat_id)
        except NotFound:
            return None
        self.map.use(telegram_chat, chat_id)
        self.watch.watch(chat)
        return chat

    def owns(self, telegram_chat: int, chat_id: str) -> bool:
        return chat_id in self.map.chats(telegram_chat)
