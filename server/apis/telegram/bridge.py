"""The Telegram bridge as a service of the server: its own thread and event loop, started
with the server and stopped with it, connected while the settings hold a token.

Settings are read again when they are saved (`settings_changed`, from the Settings route)
and every `RECHECK` seconds (another node of a cluster, or a hand, may have changed the
file): a new token or Bot API address means a new connection, a change of the allowed
users applies at the next update, an emptied token ends the polling. No restart.

It is the watched chats' `Sink` (watch.py): a run's start shows "typing…" in the Telegram
chats that hold the chat, its end sends the answer there (or the error, or "Stopped."), and
a held tool call sends Allow/Deny buttons, through the connection (connection.py), which
alone imports python-telegram-bot: nothing of it is loaded until a token is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from helpers.errors import UserError
from helpers.settings import load_settings
from server.apis.telegram.cadre_side import CadreSide
from server.apis.telegram.chat_map import ChatMap
from server.apis.telegram.config import BotConfig, bot_config
from server.apis.telegram.pending import Pending
from server.apis.telegram.turns import Turns
from server.apis.telegram.watch import ChatWatch, Ended, Waiting

if TYPE_CHECKING:
    from cluster.node import Node
    from server.apis.telegram.connection import Connection
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
        self.pending = Pending(lock=lock)
        self.watch = ChatWatch(self)
        self.side = CadreSide(chats, self.map, self.watch)
        self.turns = Turns(node)
        self.config = BotConfig()
        #: The connection of the settings' bot (None: off).
        self.connection: Connection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._wake: asyncio.Event | None = None
        self._offset: int | None = None

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
                        await _ended(polling)
                        polling = None
                    if polling is None and config.enabled and changed:
                        polling = asyncio.create_task(self._connected(config))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), RECHECK)
        finally:
            if polling is not None:
                await _ended(polling)

    async def _connected(self, config: BotConfig) -> None:
        from server.apis.telegram.connection import Connection  # python-telegram-bot: now

        connection = Connection(config, self.side, self.turns, lambda: self.config,
                                self._works, self._offset, self.pending)  # fmt: skip
        self.connection = connection
        try:
            await connection.run()
        finally:
            self._offset = connection.offset
            if self.connection is connection:
                self.connection = None

    def _works(self, chat_id: str) -> bool:
        chat = self.chats.registry.get(chat_id)
        return chat is not None and chat.running

    # -- the watched chats' news (watch.Sink), told on the agents' loop ------------------------

    def run_started(self, chat_id: str) -> None:
        self._soon(lambda connection: connection.started(chat_id))

    def run_ended(self, chat_id: str, ended: Ended) -> None:
        self._soon(lambda connection: connection.ended(chat_id, ended),
                   lambda: self._keep(chat_id, ended))  # fmt: skip

    def approval_waits(self, chat_id: str, waiting: Waiting) -> None:
        self._soon(lambda connection: connection.approval(chat_id, waiting))

    def _keep(self, chat_id: str, ended: Ended) -> None:
        """The run's answer kept for each Telegram chat of the chat (pending.py), while the
        bot is set up (switched off, its chats' answers are not for Telegram); a failure
        said in the log."""
        if not self.config.enabled:
            return
        try:
            for telegram_chat in self.map.telegram_chats_of(chat_id):
                self.pending.keep(telegram_chat, chat_id, ended)
        except Exception:
            log.exception("telegram: an answer of chat %s could not be kept for later; it"
                          " is not sent to Telegram", chat_id)  # fmt: skip

    def _soon(self, work: Callable[[Connection], Coroutine[Any, Any, None]],
              missed: Callable[[], None] | None = None) -> None:  # fmt: skip
        """`work` on the bridge's loop, with the connection there is then (none: `missed`
        in a worker thread, else dropped)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        async def on_the_loop() -> None:
            connection = self.connection
            if connection is None:
                if missed is not None:
                    await asyncio.to_thread(missed)
                else:
                    log.info("telegram: a chat's news is not sent: the bot is not connected")
                return
            await connection.told(work(connection))

        with contextlib.suppress(RuntimeError):  # closed meanwhile: the bridge stopped
            asyncio.run_coroutine_threadsafe(on_the_loop(), loop)


async def _ended(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


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
