"""How a notification history reaches its file: written behind its changes by a thread of
its own, and, when several processes share the file, as the changes themselves replayed
onto the file as it is then.

Alone, the writer writes the history's newest snapshot (store/notifications.py). In a
cluster a person's pages may be served by one node while their runs end on another, and
both change the one file: a snapshot of either would undo the other's changes. So each
process keeps the changes it made since its last write (`Added`, `Read`, `Cleared`, each
naming its entries by id), and its writer, under the cluster's lock of the file, reads the
file, replays them onto it (`replayed`) and writes the result. A change names ids, not
positions: an entry another node added meanwhile is neither marked read nor cleared by a
page that never showed it, and an entry replayed twice (a file set aside and saved again
by two nodes) is kept once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from helpers.errors import Unavailable

if TYPE_CHECKING:
    from store.notifications import Notification

log = logging.getLogger(__name__)

#: Seconds the writer thread waits for more changes before it ends (the next starts one).
IDLE = 30.0
#: Seconds before a write that failed (a full disk, the cluster's Redis away) is tried again.
RETRY = 5.0


@dataclass(frozen=True)
class Added:
    item: Notification


@dataclass(frozen=True)
class Read:
    ids: frozenset[str]


@dataclass(frozen=True)
class Cleared:
    ids: frozenset[str]


#: One change of a history, as it is replayed onto the file.
Edit = Added | Read | Cleared


def replayed(items: Iterable[Notification], edits: Sequence[Edit],
             kept: int) -> list[Notification]:  # fmt: skip
    """`items` (oldest first) with `edits` made to them in order, the newest `kept` kept
    (copies: neither is changed)."""
    found = [item.model_copy() for item in items]
    for change in edits:
        if isinstance(change, Added):
            if all(item.id != change.item.id for item in found):
                found.append(change.item.model_copy())
        elif isinstance(change, Read):
            for item in found:
                item.read = item.read or item.id in change.ids
        else:
            found = [item for item in found if item.id not in change.ids]
    return found[-kept:]


class Writer:
    """Calls `save` on a thread of its own, one save at a time, after changes: a change made
    while a save runs is saved after it (never a queue of saves). A save that fails (an
    `OSError`, or `Unavailable`: the cluster's lock not got) is tried again `RETRY` seconds
    later, or at the next change; at the stop, once more."""

    def __init__(self, save: Callable[[], None], name: str) -> None:
        self._save = save
        self._name = name
        self._cond = threading.Condition()
        self._requested = 0  # changes asked to be written
        self._written = 0  # changes on disk
        self._stopped = False
        self._failing = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        with self._cond:
            self._requested += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cadre-notifications",
                                                daemon=True)  # fmt: skip
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float) -> None:
        with self._cond:
            target = self._requested
            self._cond.wait_for(lambda: self._written >= target, timeout)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(10)

    def _run(self) -> None:
        while True:
            with self._cond:
                ready = self._cond.wait_for(
                    lambda: self._requested > self._written or self._stopped, IDLE
                )
                if not ready or self._requested <= self._written:
                    self._thread = None  # idle or stopped: a later change starts another
                    return
                target, last = self._requested, self._stopped
            saved = self._try()
            if not saved and last:
                log.error("the notification history %s stops with changes it could not save:"
                          " they are lost", self._name)  # fmt: skip
            with self._cond:
                if saved or last:
                    self._written = target
                self._cond.notify_all()
                if not saved and not last:
                    self._cond.wait_for(
                        lambda asked=target: self._stopped or self._requested > asked, RETRY
                    )

    def _try(self) -> bool:
        try:
            self._save()
        except (OSError, Unavailable) as exc:  # the entries stay in memory: tried again
            if not self._failing:
                log.error("could not save the notification history %s (%s): tried again in"
                          " %g s and at the next change", self._name, exc, RETRY)  # fmt: skip
            self._failing = True
            return False
        if self._failing:
            log.info("the notification history %s is saved again", self._name)
        self._failing = False
        return True
