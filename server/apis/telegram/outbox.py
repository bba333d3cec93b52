"""What the bot sends: an answer (its messages, then the files it names), plain notes, and
the "typing…" status while a chat works. Every send goes through python-telegram-bot's
`Bot`; a message Telegram refuses as HTML is sent again as plain text, and one it asks to
wait for (its flood limit, 429) or that the network lost is sent again (`sent`)."""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from telegram import Bot, InputFile
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from helpers.confine import PathRefused
from server.apis.telegram import formatting
from server.apis.telegram.produced_files import read_file

log = logging.getLogger(__name__)

#: Seconds between two "typing" statuses: Telegram shows one for about five.
TYPING_EVERY = 4.0
#: Tries of one send when Telegram asks to wait or the network fails.
SEND_TRIES = 4
#: The longest wait Telegram may ask for that is waited out (longer: the send fails).
LONGEST_WAIT = 60.0
T = TypeVar("T")


async def sent(send: Callable[[], Awaitable[T]]) -> T:
    """`send()`, tried again when Telegram asks to wait (after the time it gives) or the
    network failed (after a short pause), `SEND_TRIES` times in all. A message the network
    lost after Telegram had it may arrive twice: better than not at all."""
    pause = 0.5
    for attempt in range(1, SEND_TRIES + 1):
        try:
            return await send()
        except RetryAfter as exc:
            wait = exc.retry_after
            seconds = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
            if attempt == SEND_TRIES or seconds > LONGEST_WAIT:
                raise
            log.info("telegram: Telegram asks to wait %.0f s before the next message", seconds)
            await asyncio.sleep(seconds)
        except BadRequest:
            raise  # what was sent is wrong: the same again fails the same
        except NetworkError:
            if attempt == SEND_TRIES:
                raise
            await asyncio.sleep(pause)
            pause *= 2
    raise AssertionError("unreachable")


async def send_text(bot: Bot, chat: int, text: str) -> None:
    """Plain words (no markup), split where Telegram's limit needs."""
    for part in formatting.plain_parts(text):
        await sent(lambda part=part: bot.send_message(chat, part))


async def send_answer(bot: Bot, chat: int, answer: str, files: list[Path], work_dir: Path) -> None:
    """An agent's answer: its messages (HTML: code as code blocks), then the files it named
    as documents."""
    for part in formatting.messages(answer):
        if not part.strip():
            continue
        try:
            await sent(lambda part=part: bot.send_message(chat, part, parse_mode=ParseMode.HTML))
        except BadRequest as exc:  # markup Telegram does not read: the words still go
            log.info("telegram: a part of an answer was refused as HTML (%s); sent as text", exc)
            await send_text(bot, chat, answer_plain(part))
    for path in files:
        await send_document(bot, chat, path, work_dir)


def answer_plain(part: str) -> str:
    """An HTML part as the words it shows."""
    return html.unescape(re.sub(r"<[^>]+>", "", part))


async def send_document(bot: Bot, chat: int, path: Path, work_dir: Path) -> None:
    try:
        data = await asyncio.to_thread(read_file, path, work_dir)
    except (PathRefused, OSError) as exc:
        log.warning("telegram: %s named in an answer is not sent: %s", path.name, exc)
        return
    try:
        await sent(lambda: bot.send_document(chat, InputFile(data, filename=path.name)))
    except TelegramError as exc:
        log.warning("telegram: the file %s could not be sent: %s", path.name, exc)
        await send_text(bot, chat, f"The file {path.name} could not be sent: {exc}")


async def keep_typing(bot: Bot, chat: int, working: Callable[[], bool]) -> None:
    """Show "typing…" in `chat` until cancelled (the run it stands for ended), or until
    `working()` says the chat no longer works (an end the bridge did not hear)."""
    while True:
        try:
            await bot.send_chat_action(chat, ChatAction.TYPING)
        except TelegramError as exc:  # a status is worth no more than a line in the log
            log.debug("telegram: no typing status in %s: %s", chat, exc)
        await asyncio.sleep(TYPING_EVERY)
        if not working():
            return
