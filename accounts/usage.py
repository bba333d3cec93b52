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

Several processes may share the file (cluster mode: nodes sharing usr/, each counting the
runs it serves; the server then gives the ledger its node as `shared`). Each keeps apart
what it counted since its last write, and the write adds that to the totals of the file as
it is then, read again under the cluster's lock `usage` when another process wrote it
since: two nodes counting in the same second both count, and a limit holds across nodes.
Every question looks at the file's stamp first (helpers/shared_files.py), so what the
other nodes wrote counts at once; what they counted in the last second (`DELAY`) is not
known yet, so a person may go over a limit by that much. A process alone counts and writes
as before: no lock, and no look at the file between its own writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from helpers.errors import Unavailable
from helpers.files import write_text_atomic
from helpers.shared_files import SharedLocks, Stamp, stamp_at, stamp_of

log = logging.getLogger(__name__)

FILE = "usage.json"
VERSION = 1
#: Days kept in the file and shown: today and the 29 before it.
KEPT_DAYS = 30
#: Seconds a change waits for others before the file is written (one write for many calls).
DELAY = 1.0
#: Seconds before a write that failed (a full disk, Redis away) is tried again.
RETRY = 5.0
#: The cluster's lock each write of the file is made under (in cluster mode).
LOCK = "usage"


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


#: day → user → what they spent that day.
Days = dict[str, dict[str, Spent]]


def added(*parts: Days) -> Days:
    """The sum of `parts`, day by day and user by user (new objects: none is changed)."""
    total: Days = {}
    for part in parts:
        for day, users in part.items():
            for user, spent in users.items():
                total.setdefault(day, {}).setdefault(user, Spent()).add(spent)
    return total


class UsageLedger:
    """Each user's spending per UTC day (thread-safe; see the module's docstring)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time,
                 shared: SharedLocks | None = None) -> None:  # fmt: skip
        self.path = path
        self._clock = clock
        #: The other processes writing the file (a cluster's node); None: this one alone.
        self.shared = shared
        self._lock = threading.Lock()
        #: The totals as the file held them when last read or written, and its stamp then.
        self._base, self._stamp = self._read()
        #: Counted here and being written now; counted here since (written next).
        self._flushing: Days = {}
        self._pending: Days = {}
        #: The day number (days since 1970, UTC) last asked for, and its name.
        self._day: tuple[int, str] = (-1, "")
        #: A write is due (a timer runs); and the lock of writing, one write at a time.
        self._due: threading.Timer | None = None
        self._writing = threading.Lock()
        #: Held while the file is read or written (milliseconds), never while waiting on
        #: the cluster: a question does not read a file this process is writing.
        self._file = threading.Lock()
        #: Whether the last write failed (said once until one succeeds).
        self._failing = False

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
            self._pending.setdefault(today, {}).setdefault(user, Spent()).add(spent)
            self._arm(DELAY)

    def _arm(self, delay: float) -> None:
        """A write in `delay` seconds, unless one is due already (under `_lock`)."""
        if self._due is None:
            self._due = threading.Timer(delay, self.flush)
            self._due.daemon = True
            self._due.name = "cadre-usage"
            self._due.start()

    def _spent(self, day: str, user: str) -> Spent | None:
        """`user`'s spending on `day`: the file's and this process's not yet in it (under
        `_lock`); None when there is none."""
        found = [part[day][user] for part in (self._base, self._flushing, self._pending)
                 if user in part.get(day, {})]  # fmt: skip
        if not found:
            return None
        total = Spent()
        for spent in found:
            total.add(spent)
        return total

    def today(self, user: str) -> Spent:
        """What `user` spent today so far (a copy)."""
        today = self._today()
        self._fresh()
        with self._lock:
            return self._spent(today, user) or Spent()

    def window(self, user: str, days: int = KEPT_DAYS) -> dict[str, Spent]:
        """`user`'s spending on each of the last `days` days (today included) that has any,
        oldest first."""
        first = day_of(self._clock() - (days - 1) * 86400)
        self._fresh()
        with self._lock:
            every = sorted({*self._base, *self._flushing, *self._pending})
            found = {day: self._spent(day, user) for day in every if day >= first}
        return {day: spent for day, spent in found.items() if spent is not None}

    def users(self) -> set[str]:
        """Everyone the ledger has spending for."""
        self._fresh()
        with self._lock:
            parts = (self._base, self._flushing, self._pending)
            return {user for part in parts for users in part.values() for user in users}

    # -- the file ----------------------------------------------------------------

    def _fresh(self) -> None:
        """Shared: the file read again when another process wrote it since."""
        if self.shared is None:
            return
        with self._file:
            if stamp_at(self.path) == self._stamp:
                return
            base, stamp = self._read()
            with self._lock:
                self._base, self._stamp = base, stamp

    def flush(self) -> None:
        """Write the totals now (the timer's work; also shutdown's and tests')."""
        with self._writing:
            self._write()

    def _write(self) -> None:
        with self._lock:
            self._due = None
            self._flushing, self._pending = added(self._flushing, self._pending), {}
        cluster = self.shared.shared_lock(LOCK) if self.shared else contextlib.nullcontext()
        try:
            with cluster, self._file:
                base = self._base
                if self.shared is not None and stamp_at(self.path) != self._stamp:
                    base, _ = self._read()  # another node wrote it since: its totals too
                first = day_of(self._clock() - (KEPT_DAYS - 1) * 86400)
                totals = {d: u for d, u in added(base, self._flushing).items() if d >= first}
                text = json.dumps({"version": VERSION, "days": {
                    d: {u: asdict(s) for u, s in users.items()}
                    for d, users in sorted(totals.items())}}, indent=1)  # fmt: skip
                write_text_atomic(self.path, text + "\n", mode=0o600)
                with self._lock:
                    self._base, self._stamp = totals, stamp_at(self.path)
                    self._flushing = {}
        except (OSError, Unavailable) as exc:
            # Kept in memory (`_flushing`), written with the next change's, or tried again.
            with self._lock:
                self._arm(RETRY)
            if not self._failing:
                log.error("could not save the usage ledger to %s (%s): the usage is kept in"
                          " memory and written once it can be", self.path, exc)  # fmt: skip
            self._failing = True
            return
        if self._failing:
            log.info("the usage ledger is saved to %s again", self.path)
        self._failing = False

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """While a restore swaps the files (server/routes/backups.py; the backup's accounts
        part holds the file): the totals are written now and no more until it ends, and
        the file is read again if the restore replaced it, so that what is written next
        is the restored totals, never the ones held here over them."""
        with self._writing:
            self._write()
            written = stamp_at(self.path)
            yield
            if stamp_at(self.path) != written:
                with self._file:
                    restored, stamp = self._read()
                    with self._lock:
                        self._base, self._stamp = restored, stamp
                log.info("the usage ledger was read again from the restored %s", self.path)

    def close(self) -> None:
        """Write what is pending (the server stops)."""
        with self._lock:
            due, self._due = self._due, None
        if due is not None:
            due.cancel()
            self.flush()
            if self._failing:
                log.error("the usage ledger stops with usage it could not save to %s: it is"
                          " lost", self.path)  # fmt: skip

    def _read(self) -> tuple[Days, Stamp | None]:
        """The totals on disk and the stamp of the file read; a damaged file is set aside
        (never lost) and counting starts again from nothing, said in the server's log."""
        try:
            with self.path.open(encoding="utf-8") as source:
                stamp = stamp_of(os.fstat(source.fileno()))
                data = json.loads(source.read())
            return {str(day): {str(user): Spent(**row) for user, row in users.items()}
                    for day, users in data["days"].items()}, stamp  # fmt: skip
        except FileNotFoundError:
            return {}, None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            aside = self.path.with_name(f"usage.damaged-{int(self._clock())}.json")
            try:
                self.path.replace(aside)
            except OSError:
                aside = self.path
            log.error("the usage ledger %s is damaged (%s): kept as %s; today's usage counts "
                      "from nothing again", self.path, exc, aside)  # fmt: skip
            return {}, None
