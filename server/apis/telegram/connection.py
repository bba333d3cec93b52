"""The bot of one configuration, connected: getMe until the Bot API answers, then polling
(poller.py) with each update handled (conversation.py); and what the watched chats tell,
sent to the Telegram chats that hold them (a run's "typing…", its answer, an approval's
buttons).

Imported only once a token is set (bridge.py): python-telegram-bot and its HTTP client
are not loaded by a Cadre that does not use Telegram.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from telegram import Bot
from telegram.constants import ParseMode
from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from helpers import folders
from helpers.errors import UserError
from server.apis.telegram.approval_buttons import approval_buttons, approval_text
from server.apis.telegram.cadre_side import CadreSide
from server.apis.telegram.config import BotConfig
from server.apis.telegram.conversation import Conversation
from server.apis.telegram.log_mask import mask_token
from server.apis.telegram.outbox import keep_typing, send_answer, send_text, sent
from server.apis.telegram.pending import RETRY_EVERY, Pending
from server.apis.telegram.poller import FIRST_PAUSE, LONGEST_PAUSE, Poller, TokenRefused
from server.apis.telegram.produced_files import named_files
from server.apis.telegram.turns import Turns
from server.apis.telegram.watch import Ended, Waiting

log = logging.getLogger(__name__)

#: Seconds before the first new try to deliver kept answers that could not go out.
FIRST_RETRY = 1.0
#: Said before an answer that waited for Telegram to be reachable.
LATE = "(This answer came while Telegram could not be reached.)"


class Connection:
    """`config`'s bot; `settings()` gives the settings as they are now (the allowed users
    change without a new connection), `works(chat id)` whether a Cadre chat still runs."""

    def __init__(self, config: BotConfig, side: CadreSide, turns: Turns,
                 settings: Callable[[], BotConfig], works: Callable[[str], bool],
                 offset: int | None = None, pending: Pending | None = None) -> None:  # fmt: skip
        self.config = config
        self.side = side
        self.turns = turns
        self.works = works
        #: Answers that could not be delivered yet, and what wakes their delivery.
        self.pending = pending or Pending()
        self._retry = asyncio.Event()
        #: Kept answers whose "came late" line went out already, and those sent whole.
        self._noted: set[str] = set()
        self._gone_out: set[str] = set()
        self.conversation = Conversation(side, settings)
        #: The next update wanted, kept for the next connection (none comes twice).
        self.offset = offset
        #: The connected bot (None: not connected yet, or no more).
        self.bot: Bot | None = None
        self._typing: dict[tuple[int, str], asyncio.Task[None]] = {}

    async def run(self) -> None:
        """Connect and poll until cancelled or the token is refused."""
        mask_token(self.config.token)  # the HTTP client logs URLs, which hold it
        request = HTTPXRequest(connection_pool_size=32, read_timeout=10, connect_timeout=5)
        polling = HTTPXRequest(connection_pool_size=2, read_timeout=10, connect_timeout=5)
        bot = Bot(self.config.token, base_url=self.config.base_url,
                  base_file_url=self.config.base_file_url, request=request,
                  get_updates_request=polling)  # fmt: skip
        poller: Poller | None = None
        delivering: asyncio.Task[None] | None = None
        try:
            await self._introduce(bot)
            self.bot = bot
            delivering = asyncio.create_task(self.delivering())
            poller = Poller(bot, self.conversation.handle, self.turns, self.offset,
                            on_back=self._retry.set)  # fmt: skip
            await poller.run()
        except TokenRefused as exc:
            log.error("telegram: Telegram refused the bot's token (%s): check the token in "
                      "Settings (Telegram, Bot token); the bot is off until then", exc)  # fmt: skip
        except Exception:  # a fault of the bridge's own: said, and the server goes on
            log.exception("telegram: the bot stopped on an error; it starts again when its "
                          "settings change or Cadre restarts")  # fmt: skip
        finally:
            self.bot = None
            for task in [*self._typing.values(), *([delivering] if delivering else [])]:
                task.cancel()
            if poller is not None:
                self.offset = poller.offset
                await poller.confirm()
            with contextlib.suppress(TelegramError, RuntimeError):
                await bot.shutdown()

    async def _introduce(self, bot: Bot) -> None:
        """getMe until it answers (the Bot API may be down at the start)."""
        pause = FIRST_PAUSE
        told = False
        while True:
            try:
                await bot.initialize()
                break
            except InvalidToken:
                # Not its text: python-telegram-bot's names the token ("The token `...`").
                raise TokenRefused("Telegram answered Unauthorized") from None
            except NetworkError as exc:
                if not told:
                    log.warning("telegram: the Bot API at %s does not answer (%s); trying "
                                "again", self.config.api_base, exc)  # fmt: skip
                    told = True
                await asyncio.sleep(pause)
                pause = min(pause * 2, LONGEST_PAUSE)
        log.info("telegram: connected as @%s (%d allowed user(s))", bot.username,
                 len(self.config.allowed))  # fmt: skip

    # -- what the watched chats tell (on this connection's loop) ------------------------------

    async def told(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (`started`, `ended` or `approval`), a failure said in the log."""
        try:
            await work
        except TelegramError as exc:
            log.warning("telegram: a message could not be sent: %s", exc)
        except Exception:
            log.exception("telegram: a chat's news could not be sent")

    async def started(self, chat_id: str) -> None:
        bot = self.bot
        if bot is None:
            return
        for telegram_chat in await asyncio.to_thread(self.side.map.telegram_chats_of, chat_id):
            key = (telegram_chat, chat_id)
            if key not in self._typing or self._typing[key].done():
                self._typing[key] = asyncio.create_task(
                    keep_typing(bot, telegram_chat, lambda: self.works(chat_id))
                )

    async def ended(self, chat_id: str, ended: Ended) -> None:
        """The run's answer to each Telegram chat that holds the chat; one that cannot be
        reached now keeps it (pending.py) until it can."""
        for key in [key for key in self._typing if key[1] == chat_id]:
            self._typing.pop(key).cancel()
        for telegram_chat in await asyncio.to_thread(self.side.map.telegram_chats_of, chat_id):
            if await asyncio.to_thread(self.pending.has, telegram_chat):
                # Older answers wait for this Telegram chat: this one goes after them.
                await asyncio.to_thread(self.pending.keep, telegram_chat, chat_id, ended)
                self._retry.set()
                continue
            try:
                await self._tell(telegram_chat, ended)
            except Exception as exc:
                if not _later(exc):
                    raise
                await asyncio.to_thread(self.pending.keep, telegram_chat, chat_id, ended)
                self._retry.set()  # tried again soon, and more slowly as it goes on

    async def _tell(self, telegram_chat: int, ended: Ended, late: bool = False,
                    key: str = "") -> None:  # fmt: skip
        """How the run ended, in `telegram_chat`; NotConnected when the bot is not."""
        bot = self.bot
        if bot is None:
            raise NotConnected
        if late:
            await send_text(bot, telegram_chat, LATE)
            if key:
                self._noted.add(key)
        if ended.answer is None:
            words = f"The run failed: {ended.error}" if ended.error else "Stopped."
            await send_text(bot, telegram_chat, words)
            return
        work_dir, files = await asyncio.to_thread(_produced, ended)
        await send_answer(bot, telegram_chat, ended.answer, files, work_dir)

    async def delivering(self) -> None:
        """Answers kept while Telegram could not be reached, sent once it can be: at once,
        when the Bot API answers again, and while some wait, again and again (after 1 s,
        2 s, ... up to RETRY_EVERY: a long poll may not tell the way back for a while);
        until cancelled. A fault of its own is logged, and the next round goes on."""
        pause = FIRST_RETRY
        while True:
            self._retry.clear()
            try:
                all_out = await self._deliver()
            except Exception:
                log.exception("telegram: kept answers could not be delivered; trying again")
                all_out = False
            pause = RETRY_EVERY if all_out else min(pause * 2, RETRY_EVERY)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._retry.wait(), pause)
            if all_out or self._retry.is_set():
                pause = FIRST_RETRY

    async def _deliver(self) -> bool:
        """The kept answers, oldest first, each Telegram chat's in order, by the node that
        polls Telegram (one in a cluster: no answer goes out twice). A chat Telegram cannot
        be reached for waits for the next round, the others go on; an answer whose Cadre
        chat the Telegram chat no longer holds is dropped. False when some still wait."""
        waiting = await asyncio.to_thread(self.pending.all)
        if not waiting or not await asyncio.to_thread(self.turns.mine):
            return True  # nothing waits, or the polling node delivers them
        held = await asyncio.to_thread(
            self.side.map.chats_of, {kept.telegram_chat for kept in waiting}
        )
        stuck: set[int] = set()
        for kept in waiting:
            if kept.telegram_chat in stuck:
                continue  # behind an older answer to the same chat
            if kept.key in self._gone_out:
                pass  # sent before, its removal failed: removed now, not sent again
            elif kept.chat_id in held[kept.telegram_chat]:
                try:
                    late = kept.key not in self._noted  # said once, not at each try
                    await self._tell(kept.telegram_chat, kept.ended, late, kept.key)
                except Exception as exc:
                    if _later(exc):
                        stuck.add(kept.telegram_chat)
                        continue
                    log.warning("telegram: a kept answer for chat %d cannot be delivered (%s);"
                                " it is dropped", kept.telegram_chat, exc)  # fmt: skip
                self._gone_out.add(kept.key)
            else:
                log.info("telegram: a kept answer of chat %s is dropped: Telegram chat %d no"
                         " longer holds it", kept.chat_id, kept.telegram_chat)  # fmt: skip
            self._noted.discard(kept.key)
            await asyncio.to_thread(self.pending.delivered, kept)
            self._gone_out.discard(kept.key)
        return not stuck

    async def approval(self, chat_id: str, waiting: Waiting) -> None:
        bot = self.bot
        if bot is None:
            return
        for telegram_chat in await asyncio.to_thread(self.side.map.telegram_chats_of, chat_id):
            await sent(lambda chat=telegram_chat: bot.send_message(
                chat, approval_text(waiting), parse_mode=ParseMode.HTML,
                reply_markup=approval_buttons(chat_id, waiting)))  # fmt: skip


class NotConnected(Exception):  # noqa: N818 - a state, not a fault
    """The bot is not connected (yet, or any more)."""


def _later(exc: Exception) -> bool:
    """Whether a send that raised `exc` may work later (Telegram out of reach, or asking to
    wait longer than a send waits), rather than never (a chat that is gone, a bot blocked)."""
    if isinstance(exc, NotConnected | RetryAfter):
        return True
    return isinstance(exc, NetworkError) and not isinstance(exc, BadRequest)


def _produced(ended: Ended) -> tuple[Path | None, list[Path]]:
    """The run's work folder and the files its answer names there."""
    try:
        work_dir = folders.work_dir(ended.work_setting, ended.space)
    except UserError as exc:
        log.info("telegram: no files sent with an answer: %s", exc)
        return None, []
    return work_dir, named_files(ended.answer or "", work_dir)
