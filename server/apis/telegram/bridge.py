"""The Telegram bridge as a service of the server: its own thread and event loop, started
with the server and stopped with it, connected while the settings hold a token.

Settings are read again when they are saved (`settings_changed`, from the Settings route)
and every `RECHECK` seconds (another node of a cluster, or a hand, may have changed the
file): a new token or Bot API address means a new connection, a change of the allowed
users applies at the next update, an emptied token ends the polling. No restart.

It is the watched chats' `Sink` (watch.py): a run's start shows "typing…" in the Telegram
chats that hold the chat, its end sends the answer there (or the error, or "Stopped."), and
a held tool call sends Allow/Deny buttons.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from telegram import Bot
from telegram.constants import ParseMode
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.request import HTTPXRequest

from helpers import folders
from helpers.errors import UserError
from helpers.settings import load_settings
from server.apis.telegram.approval_buttons import approval_buttons, approval_text
from server.apis.telegram.cadre_side import CadreSide
from server.apis.telegram.chat_map import ChatMap
from server.apis.telegram.config import BotConfig, bot_config
from server.apis.telegram.conversation import Conversation
from server.apis.telegram.log_mask import mask_token
from server.apis.telegram.outbox import keep_typing, send_answer, send_text
from server.apis.telegram.poller import FIRST_PAUSE, LONGEST_PAUSE, Poller, TokenRefused
from server.apis.telegram.produced_files import named_files
from server.apis.telegram.turns import Turns
from server.apis.telegram.watch import ChatWatch, Ended, Waiting

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

    from cluster.node import Node
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Seconds between two reads of the settings when nobody said they changed.
RECHECK = 10.0
#: Seconds a stop waits for the bridge's thread (a send in flight gives up by then).
STOP_WAIT = 5.0


class TelegramBridge:
    """The bot of the settings, connected while they hold a token."""

    def __init__(self, chats: ChatManager, node: Node | None = None) -> None:
        self.chats = chats
        shared = node if node is not None and node.clustered else None
        lock = (lambda: shared.shared_lock("telegram")) if shared is not None else None
        self.map = ChatMap(lock=lock)
        self.watch = ChatWatch(self)
        self.conversation = Conversation(CadreSide(chats, self.map, self.watch), self._current)
        self.turns = Turns(node)
        self.config = BotConfig()
        #: The connected bot (None: off, or not connected yet).
        self.bot: Bot | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._wake: asyncio.Event | None = None
        self._typing: dict[tuple[int, str], asyncio.Task[None]] = {}
        self._offset: int | None = None

    def _current(self) -> BotConfig:
        return self.config

    # -- the service, from the server's threads ---------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="cadre-telegram",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        ready.wait(10)

    def settings_changed(self) -> None:
        """The settings were saved: read them again now."""
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # its loop closed meanwhile: it has ended
            asyncio.run_coroutine_threadsafe(_cancel_all(), loop)
        thread.join(STOP_WAIT)
        if thread.is_alive():
            log.warning("telegram: the bridge did not stop within %g s", STOP_WAIT)
        self.watch.close()
        self._thread = None

    # -- its loop ----------------------------------------------------------------------------

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        self._wake = asyncio.Event()
        loop.call_soon(ready.set)
        try:
            loop.run_until_complete(self._supervise())
        except asyncio.CancelledError:
            pass  # stopped
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._loop = None

    async def _supervise(self) -> None:
        """Keep the connection as the settings say, until cancelled."""
        assert self._wake is not None
        polling: asyncio.Task[None] | None = None
        try:
            while True:
                self._wake.clear()  # before reading: a save meanwhile wakes it again
                config = await asyncio.to_thread(_read_config)
                if config is not None:
                    changed = config.connection() != self.config.connection()
                    self.config = config
                    if polling is not None and (changed or not config.enabled):
                        polling.cancel()
                        await asyncio.gather(polling, return_exceptions=True)
                        polling = None
                    if polling is None and config.enabled and changed:
                        polling = asyncio.create_task(self._connected(config))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), RECHECK)
        finally:
            if polling is not None:
                polling.cancel()
                await asyncio.gather(polling, return_exceptions=True)

    async def _connected(self, config: BotConfig) -> None:
        """Connect with `config` and poll, until cancelled or the token is refused."""
        mask_token(config.token)  # the client logs URLs, which hold it
        request = HTTPXRequest(connection_pool_size=32, read_timeout=10, connect_timeout=5)
        polling = HTTPXRequest(connection_pool_size=2, read_timeout=10, connect_timeout=5)
        bot = Bot(config.token, base_url=config.base_url, base_file_url=config.base_file_url,
                  request=request, get_updates_request=polling)  # fmt: skip
        poller: Poller | None = None
        try:
            await self._introduce(bot, config)
            self.bot = bot
            poller = Poller(bot, self.conversation.handle, self.turns, self._offset)
            await poller.run()
        except TokenRefused as exc:
            log.error("telegram: Telegram refused the bot's token (%s): check the token in "
                      "Settings (Telegram, Bot token); the bot is off until then", exc)  # fmt: skip
        except Exception:  # a fault of the bridge's own: said, and the server goes on
            log.exception("telegram: the bot stopped on an error; it starts again when its "
                          "settings change or Cadre restarts")  # fmt: skip
        finally:
            self.bot = None
            if poller is not None:
                self._offset = poller.offset
                await poller.confirm()
            with contextlib.suppress(TelegramError, RuntimeError):
                await bot.shutdown()

    async def _introduce(self, bot: Bot, config: BotConfig) -> None:
        """getMe until it answers (the Bot API may be down at the start)."""
        pause = FIRST_PAUSE
        told = False
        while True:
            try:
                await bot.initialize()
                break
            except InvalidToken as exc:
                raise TokenRefused(str(exc)) from None
            except NetworkError as exc:
                if not told:
                    log.warning("telegram: the Bot API at %s does not answer (%s); trying "
                                "again", config.api_base, exc)  # fmt: skip
                    told = True
                await asyncio.sleep(pause)
                pause = min(pause * 2, LONGEST_PAUSE)
        log.info("telegram: connected as @%s (%d allowed user(s))", bot.username,
                 len(config.allowed))  # fmt: skip

    # -- the watched chats' news (watch.Sink), told on the agents' loop ------------------------

    def run_started(self, chat_id: str) -> None:
        self._soon(self._started(chat_id))

    def run_ended(self, chat_id: str, ended: Ended) -> None:
        self._soon(self._ended(chat_id, ended))

    def approval_waits(self, chat_id: str, waiting: Waiting) -> None:
        self._soon(self._approval(chat_id, waiting))

    def _soon(self, work: Coroutine[Any, Any, None]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            work.close()
            return
        asyncio.run_coroutine_threadsafe(self._told(work), loop)

    async def _told(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except TelegramError as exc:
            log.warning("telegram: a message could not be sent: %s", exc)
        except Exception:
            log.exception("telegram: a chat's news could not be sent")

    async def _started(self, chat_id: str) -> None:
        bot = self.bot
        if bot is None:
            return
        for telegram_chat in await asyncio.to_thread(self.map.telegram_chats_of, chat_id):
            key = (telegram_chat, chat_id)
            if key not in self._typing or self._typing[key].done():
                self._typing[key] = asyncio.create_task(
                    keep_typing(bot, telegram_chat, lambda: self._works(chat_id))
                )

    def _works(self, chat_id: str) -> bool:
        chat = self.chats.registry.get(chat_id)
        return chat is not None and chat.running

    async def _ended(self, chat_id: str, ended: Ended) -> None:
        for key in [key for key in self._typing if key[1] == chat_id]:
            self._typing.pop(key).cancel()
        bot = self.bot
        if bot is None:
            log.info("telegram: chat %s ended a run while the bot is not connected", chat_id)
            return
        targets = await asyncio.to_thread(self.map.telegram_chats_of, chat_id)
        if not targets:
            return
        if ended.answer is None:
            words = f"The run failed: {ended.error}" if ended.error else "Stopped."
            for telegram_chat in targets:
                await send_text(bot, telegram_chat, words)
            return
        work_dir, files = await asyncio.to_thread(_produced, ended)
        for telegram_chat in targets:
            await send_answer(bot, telegram_chat, ended.answer, files, work_dir)

    async def _approval(self, chat_id: str, waiting: Waiting) -> None:
        bot = self.bot
        if bot is None:
            return
        for telegram_chat in await asyncio.to_thread(self.map.telegram_chats_of, chat_id):
            await bot.send_message(telegram_chat, approval_text(waiting), parse_mode=ParseMode.HTML,
                                   reply_markup=approval_buttons(chat_id, waiting))  # fmt: skip


async def _cancel_all() -> None:
    """Cancel every task of the bridge's loop (run on it): the supervisor ends with them."""
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()


def _read_config() -> BotConfig | None:
    try:
        return bot_config(load_settings())
    except UserError as exc:  # settings the environment makes invalid: said at every read
        log.error("telegram: the settings cannot be read (%s); the bot stays as it is", exc)
        return None


def _produced(ended: Ended) -> tuple[Any, list[Any]]:
    """The run's work folder and the files its answer names there."""
    try:
        work_dir = folders.work_dir(ended.work_setting, ended.space)
    except UserError as exc:
        log.info("telegram: no files sent with an answer: %s", exc)
        return None, []
    return work_dir, named_files(ended.answer or "", work_dir)
