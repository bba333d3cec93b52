"""What each person spent on models, day by day: the ledger behind daily limits and the
admin's view of everyone's usage.

Every model call's usage (tokens in and out, cost) is added under the user whose chat made
it, on the day (UTC) it was made. The totals live in memory, so that counting a call and
asking what a user spent today cost a dictionary's work (the agents' loop does both on
every step); the file, `usr/usage.json`, is written by a thread of its own a moment after
a change (`DELAY`: many calls, one write), and once more when the server stops. Days older
than `KEPT_DAYS` drop out as it is written. The file is in the backup's accounts part
(store/backup/parts.py); a restore in a running server swaps it while the ledger is
`held`, and the ledger reads it again after.

One process writes the file. Two processes sharing usr/ (cluster mode, a later change)
would each keep their own totals and overwrite the other's: the ledger then belongs in a
store they share (Redis, as the design says), behind this same face.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from accounts.stored_file import stamp_of
from helpers.files import write_text_atomic

log = logging.getLogger(__name__)

FILE = "usage.json"
VERSION = 1
#: Days kept in the file and shown: today and the 29 before it.
KEPT_DAYS = 30
#: Seconds a change waits for others before the file is written (one write for many calls).
DELAY = 1.0


@dataclass(slots=True)
class Spent:
    """Tokens, money and model calls of one user over some days."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    #: US dollars, from litellm's prices (a model it cannot price counts 0).
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Spent) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.cost += other.cost

    def view(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "calls": self.calls,
                "cost": round(self.cost, 6)}  # fmt: skip


def day_of(moment: float) -> str:
    """The UTC day of a time stamp, as the ledger names days: "2025-01-31"."""
    return time.strftime("%Y-%m-%d", time.gmtime(moment))


def next_midnight(moment: float) -> float:
    """The time stamp of the next midnight UTC after `moment`: when a day's limits reset."""
    day = datetime.fromtimestamp(moment, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


class UsageLedger:
    """Each user's spending per UTC day (thread-safe; see the module's docstring)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        #: day → user → what they spent that day.
        self._days: dict[str, dict[str, Spent]] = self._read()
        #: The day number (days since 1970, UTC) last asked for, and its name.
        self._day: tuple[int, str] = (-1, "")
        #: A write is due (a timer runs); and the lock of writing, one write at a time.
        self._due: threading.Timer | None = None
        self._writing = threading.Lock()

    def now(self) -> float:
        """The ledger's clock: the time that decides which day it is."""
        return self._clock()

    def _today(self) -> str:
        """Today's name (asked on every step: named again only when the day changed)."""
        now = self._clock()
        number = int(now // 86400)  # POSIX days are 86,400 s long: no leap seconds
        if number != self._day[0]:
            self._day = (number, day_of(now))
        return self._day[1]

    # -- counting ----------------------------------------------------------------

    def add(self, user: str, spent: Spent) -> None:
        """Count `spent` for `user` today ("" stands for the desktop mode's one person)."""
        today = self._today()
        with self._lock:
            self._days.setdefault(today, {}).setdefault(user, Spent()).add(spent)
            if self._due is None:
                self._due = threading.Timer(DELAY, self.flush)
                self._due.daemon = True
                self._due.name = "cadre-usage"
                self._due.start()

    def today(self, user: str) -> Spent:
        """What `user` spent today so far (a copy)."""
        today = self._today()
        with self._lock:
            found = self._days.get(today, {}).get(user)
            return replace(found) if found is not None else Spent()

    def window(self, user: str, days: int = KEPT_DAYS) -> dict[str, Spent]:
        """`user`'s spending on each of the last `days` days (today included) that has any,
        oldest first."""
        first = day_of(self._clock() - (days - 1) * 86400)
        with self._lock:
            return {day: replace(users[user]) for day, users in sorted(self._days.items())
                    if day >= first and user in users}  # fmt: skip

    def users(self) -> set[str]:
        """Everyone the ledger has spending for."""
        with self._lock:
            return {user for users in self._days.values() for user in users}

    # -- the file ----------------------------------------------------------------

    def flush(self) -> None:
        """Write the totals now (the timer's work; also shutdown's and tests')."""
        with self._writing:
            self._write()

    def _write(self) -> None:
        with self._lock:
            self._due = None
            first = day_of(self._clock() - (KEPT_DAYS - 1) * 86400)
            self._days = {d: users for d, users in self._days.items() if d >= first}
            days = {d: {u: asdict(s) for u, s in users.items()}
                    for d, users in sorted(self._days.items())}  # fmt: skip
        try:
            text = json.dumps({"version": VERSION, "days": days}, indent=1)
            write_text_atomic(self.path, text + "\n", mode=0o600)
        except OSError:  # kept in memory: the next change (or the stop) tries again
            log.exception("could not save the usage ledger to %s", self.path)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """While a restore swaps the files (server/routes/backups.py; the backup's accounts
        part holds the file): the totals are written now and no more until it ends, and
        the file is read again if the restore replaced it, so that what is written next
        is the restored totals, never the ones held here over them."""
        with self._writing:
            self._write()
            written = stamp_of(self.path)
            yield
            if stamp_of(self.path) != written:
                restored = self._read()
                with self._lock:
                    self._days = restored
                log.info("the usage ledger was read again from the restored %s", self.path)

    def close(self) -> None:
        """Write what is pending (the server stops)."""
        with self._lock:
            due, self._due = self._due, None
        if due is not None:
            due.cancel()
            self.flush()

    def _read(self) -> dict[str, dict[str, Spent]]:
        """The totals on disk; a damaged file is set aside (never lost) and counting starts
        again from nothing, said in the server's log."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {str(day): {str(user): Spent(**row) for user, row in users.items()}
                    for day, users in data["days"].items()}  # fmt: skip
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            aside = self.path.with_name(f"usage.damaged-{int(self._clock())}.json")
            try:
                self.path.replace(aside)
            except OSError:
                aside = self.path
            log.error("the usage ledger %s is damaged (%s): kept as %s; today's usage counts "
                      "from nothing again", self.path, exc, aside)  # fmt: skip
            return {}
