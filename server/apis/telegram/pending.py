"""Answers the bot could not deliver, kept until it can: usr/telegram/pending.json.

A run can end while Telegram cannot be reached (the Bot API down, the network gone past
the sends' retries, the bot reconnecting after a settings change). Its answer was dropped
with a line in the log; now it waits here, per Telegram chat, and goes out once Telegram
can be reached again (connection.py tries at each connection, when the Bot API answers
again, and from 1 s up to every RETRY_EVERY seconds while answers wait), oldest first,
said to be late. Kept on disk, so a restart in between loses nothing.

`{"version": 1, "pending": {"<telegram chat id>": [{"chat", "answer", "error", "work",
"space", "at", "key"}, ...]}}`: what `watch.Ended` says of the run. At most PER_CHAT answers a
Telegram chat; past it the oldest go (said in the log).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.files import usr_path
from helpers.kept_map import KeptMap, Locker
from server.apis.telegram.watch import Ended

log = logging.getLogger(__name__)

#: Where they wait, under usr/.
FILE = "telegram/pending.json"
#: What an unreadable file costs (helpers/kept_map.py says it in the log).
LOST = "answers the bot could not deliver are lost"
#: Answers kept per Telegram chat.
PER_CHAT = 20
#: The longest wait between two tries while answers wait.
RETRY_EVERY = 30.0


@dataclass(frozen=True)
class Undelivered:
    """One undelivered answer: the Telegram chat, the Cadre chat, how its run ended."""

    telegram_chat: int
    chat_id: str
    ended: Ended
    at: float
    #: Its own name among the kept answers.
    key: str


class Pending:
    """Undelivered answers, per Telegram chat."""

    def __init__(self, path: Path | None = None, lock: Locker | None = None) -> None:
        self._map = KeptMap(path or usr_path(FILE), "pending", LOST, lock)

    def keep(self, telegram_chat: int, chat_id: str, ended: Ended) -> None:
        entry = {"chat": chat_id, "answer": ended.answer, "error": ended.error,
                 "work": ended.work_setting, "space": str(ended.space or ""),
                 "at": time.time(), "key": uuid.uuid4().hex}  # fmt: skip

        def change(data: dict[str, Any]) -> None:
            waiting = [*data.get(str(telegram_chat), []), entry]
            if len(waiting) > PER_CHAT:
                log.warning("telegram: %d answers for chat %d could not be delivered; the "
                            "oldest is dropped", len(waiting), telegram_chat)  # fmt: skip
            data[str(telegram_chat)] = waiting[-PER_CHAT:]

        self._map.change(change)
        log.info("telegram: an answer of chat %s waits until Telegram can be reached", chat_id)

    def has(self, telegram_chat: int) -> bool:
        """Whether answers for `telegram_chat` wait (a newer one then waits behind them)."""
        return bool(self._map.read().get(str(telegram_chat)))

    def all(self) -> list[Undelivered]:
        """Every waiting answer, oldest first."""
        found = []
        for key, entries in self._map.read().items():
            for entry in entries if isinstance(entries, list) else []:
                undelivered = _undelivered(key, entry)
                if undelivered is not None:
                    found.append(undelivered)
        return sorted(found, key=lambda u: u.at)

    def delivered(self, sent: Undelivered) -> None:
        """`sent` went out (or never can): no longer kept."""

        def change(data: dict[str, Any]) -> bool:
            key = str(sent.telegram_chat)
            entries = data.get(key, [])
            kept = [e for e in entries if _undelivered(key, e) != sent]
            if len(kept) == len(entries):
                return False
            if kept:
                data[key] = kept
            else:
                data.pop(key, None)
            return True

        self._map.change(change)


def _undelivered(key: str, entry: object) -> Undelivered | None:
    """The entry as a `Undelivered`, None when it is not one (a hand-edited file)."""
    try:
        assert isinstance(entry, dict)
        answer = entry.get("answer")
        space = str(entry.get("space") or "")
        ended = Ended(answer if isinstance(answer, str) else None, str(entry.get("error", "")),
                      str(entry.get("work", "")), Path(space) if space else None)  # fmt: skip
        at = float(entry["at"])
        # Its own key; one written by hand may have none: its chat and time stand for it.
        own = str(entry.get("key") or f"{key}:{entry['chat']}:{at!r}")
        return Undelivered(int(key), str(entry["chat"]), ended, at, own)
    except (AssertionError, KeyError, TypeError, ValueError):
        return None
