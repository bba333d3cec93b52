"""Long polling of the Bot API (getUpdates), reconnecting after the Bot API goes away.

One getUpdates waits up to `LONG_POLL` seconds for news; each update is confirmed by the
next call's offset once handed on. When the Bot API does not answer (a network error, a
timeout, a 5xx), the poller tries again after a pause that doubles from `FIRST_PAUSE` to
`LONGEST_PAUSE`, saying once in the log that Telegram is unreachable and once that it is
reached again. A token Telegram refuses ends the polling (`TokenRefused`): the bridge waits
for the settings to change.

Updates of one Telegram chat are handled one after another, in order; different chats'
at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from telegram import Bot, Update
from telegram.error import Conflict, InvalidToken, NetworkError, RetryAfter, TelegramError

from server.apis.telegram.turns import Turns

log = logging.getLogger(__name__)

#: Seconds one getUpdates may wait for news (Telegram allows up to 50).
LONG_POLL = 25.0
FIRST_PAUSE = 0.25
LONGEST_PAUSE = 5.0
#: The updates the bridge reads.
ALLOWED_UPDATES = ["message", "callback_query"]

Handle = Callable[[Bot, Update], Awaitable[None]]


class TokenRefused(Exception):  # noqa: N818 - what the admin is told, not a failure of theirs
    """Telegram refused the bot's token."""


class Poller:
    """getUpdates in a loop for `bot`, each update given to `handle`."""

    def __init__(self, bot: Bot, handle: Handle, turns: Turns, offset: int | None = None,
                 on_back: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.bot = bot
        self.handle = handle
        self.turns = turns
        #: Told when the Bot API answers again after it did not.
        self.on_back = on_back
        #: The next update wanted: what the Bot API may forget.
        self.offset = offset
        self._pause = FIRST_PAUSE
        self._down = False
        self._chats: dict[int, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Poll until cancelled; TokenRefused when Telegram refuses the token."""
        while True:
            if not await asyncio.to_thread(self.turns.mine):
                await asyncio.sleep(self.turns.wait())
                continue
            updates = await self._get_updates()
            for update in updates:
                self.offset = update.update_id + 1
                self._spawn(update)

    async def confirm(self) -> None:
        """Tell the Bot API the updates handed on are read (at a stop, so that none comes
        again after a restart)."""
        if self.offset is not None:
            try:
                await self.bot.get_updates(offset=self.offset, timeout=0, read_timeout=2)
            except TelegramError as exc:
                log.debug("telegram: the last updates could not be confirmed: %s", exc)

    async def _get_updates(self) -> tuple[Update, ...]:
        try:
            updates = await self.bot.get_updates(
                offset=self.offset, timeout=self.turns.poll_seconds(LONG_POLL),
                allowed_updates=ALLOWED_UPDATES,
            )  # fmt: skip
        except InvalidToken as exc:
            raise TokenRefused(str(exc)) from None
        except RetryAfter as exc:
            await asyncio.sleep(_seconds(exc.retry_after))
            return ()
        except Conflict as exc:  # another program polls with this token
            log.warning("telegram: another program reads this bot's updates (%s); only one "
                        "may: stop the other, or give Cadre a bot of its own", exc)  # fmt: skip
            await self._wait()
            return ()
        except NetworkError as exc:
            if not self._down:
                log.warning("telegram: the Bot API at %s does not answer (%s); trying again",
                            self.bot.base_url.removesuffix(self.bot.token), exc)  # fmt: skip
                self._down = True
            await self._wait()
            return ()
        if self._down:
            log.info("telegram: the Bot API answers again")
            self._down = False
            if self.on_back is not None:
                self.on_back()
        self._pause = FIRST_PAUSE
        return updates

    async def _wait(self) -> None:
        await asyncio.sleep(self._pause)
        self._pause = min(self._pause * 2, LONGEST_PAUSE)

    def _spawn(self, update: Update) -> None:
        chat = update.effective_chat.id if update.effective_chat else 0
        lock = self._chats.setdefault(chat, asyncio.Lock())
        task = asyncio.create_task(self._handle(lock, update))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, lock: asyncio.Lock, update: Update) -> None:
        async with lock:
            try:
                await self.handle(self.bot, update)
            except Exception:  # one update's failure must not stop the polling
                log.exception("telegram: update %s could not be handled", update.update_id)
                if update.effective_chat is not None:
                    try:
                        await self.bot.send_message(
                            update.effective_chat.id,
                            "Something went wrong with that message (Cadre's log says what). "
                            "Try again.")  # fmt: skip
                    except TelegramError:
                        pass


def _seconds(value: object) -> float:
    total = getattr(value, "total_seconds", None)
    return float(total()) if callable(total) else float(value)  # type: ignore[arg-type]
