"""One update from Telegram, handled: who sent it (strangers are refused before anything
else), then a command (/new, /chats, /stop, /start, /help), a button (an approval's answer,
a chat chosen), or a message (text, a photo or a file attached, a voice note as its text)
for the Telegram chat's current Cadre chat.

Runs on the bridge's loop; what blocks (the chat store, the disk) runs in worker threads.
The answer to a message comes later, from its run's end (bridge.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.error import TelegramError

from helpers.errors import CadreError
from server.apis.telegram.approval_buttons import decision
from server.apis.telegram.cadre_side import CadreSide
from server.apis.telegram.config import BotConfig
from server.apis.telegram.outbox import send_text, sent
from server.apis.telegram.voice import NoTranscript, transcript

log = logging.getLogger(__name__)

REFUSED = ("This bot is private: your Telegram account ({user}) may not use it. If it is "
           "yours, add {user} to the allowed Telegram users in Cadre's Settings.")  # fmt: skip
HELP = (
    "Write to talk to Agent 0; photos and files reach it too, voice notes as text.\n"
    "/new starts another chat, /chats lists yours (and switches), /stop stops the run."
)
TOO_LARGE = ("That file is larger than the 20 MB a bot may download from Telegram: put it in"
             " the work folder instead.")  # fmt: skip
#: Seconds before the same stranger is told again that the bot is not theirs.
REFUSE_EVERY = 600.0
#: Strangers remembered at most (then forgotten all at once: told again, no harm).
REFUSED_KEPT = 10_000
#: The largest file the Bot API lets a bot download (getFile): 20 MB.
MAX_DOWNLOAD = 20 * 1024 * 1024


class Conversation:
    """The bridge's handling of updates, with the allowed users read at each one."""

    def __init__(self, side: CadreSide, config: Callable[[], BotConfig]) -> None:
        self.side = side
        self.config = config
        #: When each stranger was last told they may not use the bot (monotonic).
        self._refused: dict[int, float] = {}

    async def handle(self, bot: Bot, update: Update) -> None:
        user = update.effective_user
        if user is None:
            return  # a channel post, a poll's news: nobody to answer
        if user.id not in self.config().allowed:
            await self._refuse(bot, update, user.id)
            return
        if update.callback_query is not None:
            await self._button(bot, update.callback_query)
        elif update.message is not None:
            await self._message(bot, update.message)

    async def _refuse(self, bot: Bot, update: Update, user: int) -> None:
        """A stranger's button press is answered (Telegram waits for that, and it writes no
        message); a stranger's message is told once in a while, in a private chat only: a
        flood of strangers' messages (or a group's chatter) makes no flood of answers, nor of
        log lines."""
        if update.callback_query is not None:
            await update.callback_query.answer(REFUSED.format(user=user)[:190], show_alert=True)
        now = time.monotonic()
        if now - self._refused.get(user, -REFUSE_EVERY) < REFUSE_EVERY:
            return
        if len(self._refused) >= REFUSED_KEPT:
            self._refused.clear()
        self._refused[user] = now
        log.warning("telegram: refused an update of user %s (not an allowed Telegram user)", user)
        chat = update.effective_chat
        if update.callback_query is None and chat is not None and chat.type == "private":
            await send_text(bot, chat.id, REFUSED.format(user=user))

    async def _message(self, bot: Bot, message: Message) -> None:
        chat = message.chat.id
        text = (message.text or message.caption or "").strip()
        try:
            if text.startswith("/") and not (message.photo or message.document):
                await self._command(bot, chat, text)
            elif message.voice or message.audio:
                await self._voice(bot, message)
            elif message.photo or message.document:
                await self._with_file(bot, message, text)
            elif text:
                await asyncio.to_thread(self.side.send, chat, text)
            else:
                await send_text(bot, chat, "I read text, photos, files and voice notes only.")
        except CadreError as exc:  # refused by Cadre (a limit, a chat gone): said as it is
            await send_text(bot, chat, str(exc))

    async def _command(self, bot: Bot, chat: int, text: str) -> None:
        name = text.split()[0].split("@")[0].lower()  # "/new@MyBot" in a group
        if name == "/new":
            await asyncio.to_thread(self.side.new, chat)
            await send_text(bot, chat, "A new chat is started: write your message.")
        elif name == "/chats":
            await self._list(bot, chat)
        elif name == "/stop":
            current = await asyncio.to_thread(self.side.current, chat)
            if current is None or not current.running:
                await send_text(bot, chat, "Nothing is running.")
            else:
                await asyncio.to_thread(current.stop)  # its run's end says "Stopped."
        else:  # /start, /help and what is not a command of this bot
            await send_text(bot, chat, HELP)

    async def _list(self, bot: Bot, chat: int) -> None:
        listed = await asyncio.to_thread(self.side.listed, chat)
        if not listed:
            await send_text(bot, chat, "No chats yet: write your first message.")
            return
        lines = [f"{n}. {item.name}{' (running)' if item.running else ''}"
                 f"{'  ← current' if item.current else ''}"
                 for n, item in enumerate(listed, 1)]  # fmt: skip
        buttons = [[InlineKeyboardButton(f"{n}. {item.name}"[:60],
                                         callback_data=f"use:{item.chat_id}")]
                   for n, item in enumerate(listed, 1) if not item.current][-10:]  # fmt: skip
        await sent(lambda: bot.send_message(
            chat,
            "Your chats:\n" + "\n".join(lines),
            reply_markup=InlineKeyboardMarkup(buttons) if buttons else None,
        ))  # fmt: skip

    async def _button(self, bot: Bot, query: CallbackQuery) -> None:
        data = query.data or ""
        chat = query.message.chat.id if query.message is not None else None
        if chat is None:
            await query.answer()
            return
        if data.startswith("use:"):
            chosen = await asyncio.to_thread(self.side.switch, chat, data[4:])
            await query.answer("Switched" if chosen else "That chat is gone")
            if chosen is not None:
                await send_text(bot, chat, f"Now talking in: {chosen.name or 'Telegram'}")
            return
        answer = decision(data)
        if answer is None or not await asyncio.to_thread(self.side.owns, chat, answer.chat_id):
            await query.answer("This button no longer does anything.")
            return
        try:
            cadre_chat = await asyncio.to_thread(self.side.chats.get, answer.chat_id)
            await asyncio.to_thread(cadre_chat.approve, answer.item_id, answer.allow)
        except CadreError as exc:  # answered already (in the page), or the run ended
            await query.answer(str(exc)[:190])
            return
        said = "Allowed" if answer.allow else "Denied"
        await query.answer(said)
        try:
            await query.edit_message_reply_markup(None)
            await bot.send_message(chat, f"{said}.")
        except TelegramError as exc:
            log.debug("telegram: the approval's message was not updated: %s", exc)

    async def _with_file(self, bot: Bot, message: Message, text: str) -> None:
        if message.photo:
            file_id, name, size = (
                message.photo[-1].file_id,
                "photo.jpg",
                message.photo[-1].file_size,
            )
        else:
            assert message.document is not None
            document = message.document
            file_id, name, size = document.file_id, document.file_name or "file", document.file_size
        if size and size > MAX_DOWNLOAD:
            await send_text(bot, message.chat.id, TOO_LARGE)
            return
        data = bytes(await (await bot.get_file(file_id)).download_as_bytearray())
        await asyncio.to_thread(self.side.send, message.chat.id, text, [(name, data)])

    async def _voice(self, bot: Bot, message: Message) -> None:
        note = message.voice or message.audio
        assert note is not None
        try:
            data = bytes(await (await bot.get_file(note.file_id)).download_as_bytearray())
            text = await transcript(data, "voice.ogg", note.mime_type or "audio/ogg")
        except NoTranscript as exc:
            await send_text(bot, message.chat.id, str(exc))
            return
        await send_text(bot, message.chat.id, f"Heard: {text}")
        await asyncio.to_thread(self.side.send, message.chat.id, text)
