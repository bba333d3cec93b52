"""The notification history: every notice the user was given, kept (bounded) in `usr/`.

Entries come from the chats (store/notification_feed.py): `notify` log items
(the notify_user tool, the scheduler's run reports), runs that ended in an
error, and long runs that finished. The page lists them with an unread count,
marks them read, clears them, and opens each one's chat.

The newest `kept` entries are kept; older ones drop out. The file
(`usr/notifications.json`, versioned) is replaced atomically by a writer
thread, so adding an entry never waits on the disk (entries are added from the
agents' thread, inside the chat log's change feed). A damaged file is moved
aside (never lost) with an error in the log, and the entries still readable
in it are kept; a damaged entry costs only itself.

Listeners hear every change (`Change`) on the thread that made it and must be
quick: the web pusher only queues it for its own thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from helpers.files import write_text_atomic

log = logging.getLogger(__name__)

VERSION = 1
#: Entries kept: the newest; older ones drop out as new ones come.
KEPT = 200
#: Characters of a message kept (an agent's whole answer may be long; the chat has it all).
MESSAGE_LIMIT = 2000
#: Seconds the writer thread waits for more changes before it ends (the next starts one).
IDLE = 30.0
#: Characters of a title kept.
TITLE_LIMIT = 200

#: Where a notification came from: a `notify` log item, a run that failed, a long run done.
Kind = Literal["notify", "error", "finished"]
Level = Literal["info", "success", "warning", "error"]
LEVELS: frozenset[str] = frozenset({"info", "success", "warning", "error"})


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Notification(BaseModel):
    """One entry of the history."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    #: Seconds since the epoch (UTC).
    time: float = Field(default_factory=time.time)
    kind: Kind = "notify"
    type: Level = "info"
    title: str = Field(default="", max_length=TITLE_LIMIT)
    message: str = Field(default="", max_length=MESSAGE_LIMIT)
    chat_id: str | None = None
    #: The scheduler's task whose run this reports, if any.
    task: str | None = None
    read: bool = False


@dataclass(frozen=True)
class Change:
    """What changed: an entry added, entries marked read, or the history cleared.
    `unread` is the count after the change."""

    kind: Literal["added", "read", "cleared"]
    unread: int
    item: Notification | None = None
    ids: list[str] = field(default_factory=list)


Listener = Callable[[Change], None]


class NotificationHistory:
    """The bounded, persisted history (thread-safe)."""

    def __init__(self, path: Path, kept: int = KEPT) -> None:
        self.path = path
        self.kept = kept
        self._lock = threading.Lock()
        self._damaged = False
        self._items: list[Notification] = self._read()[-kept:]  # oldest first
        self._listeners: list[Listener] = []
        self._writer = _Writer(self._snapshot, path)
        if self._damaged and self._items:
            self._writer.request()  # the entries read from the set-aside file, saved again

    # -- reading ---------------------------------------------------------------

    def items(self) -> list[Notification]:
        """Every entry, newest first."""
        with self._lock:
            return [item.model_copy() for item in reversed(self._items)]

    def unread(self) -> int:
        with self._lock:
            return sum(not item.read for item in self._items)

    # -- changing --------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def add(
        self,
        title: str,
        message: str = "",
        *,
        kind: Kind = "notify",
        type: str = "info",  # noqa: A002 - the notify item's own name for it
        chat_id: str | None = None,
        task: str | None = None,
    ) -> Notification:
        """Keep a new entry (an unknown `type` becomes "info"); the oldest drops out past
        `kept`."""
        item = Notification(
            kind=kind,
            type=type if type in LEVELS else "info",  # type: ignore[arg-type]
            title=clip(title, TITLE_LIMIT),
            message=clip(message, MESSAGE_LIMIT),
            chat_id=chat_id,
            task=task,
        )
        with self._lock:
            self._items.append(item)
            del self._items[: -self.kept]
            change = Change("added", self._count(), item=item.model_copy())
        self._changed(change)
        return item

    def mark_read(self, ids: Iterable[str] | None = None) -> list[str]:
        """Mark the entries `ids` read (all when None); the ids that were unread."""
        wanted = None if ids is None else set(ids)
        with self._lock:
            marked = []
            for item in self._items:
                if not item.read and (wanted is None or item.id in wanted):
                    item.read = True
                    marked.append(item.id)
            change = Change("read", self._count(), ids=marked)
        if marked:
            self._changed(change)
        return marked

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._items.clear()
        self._changed(Change("cleared", 0))

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every change so far is on disk (shutdown, tests)."""
        self._writer.flush(timeout)

    def close(self) -> None:
        """Write what is pending and stop the writer (a later change is still written,
        at once, by a writer that ends with it)."""
        self._writer.stop()

    def _count(self) -> int:
        return sum(not item.read for item in self._items)

    def _changed(self, change: Change) -> None:
        self._writer.request()
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # a listener's failure must not cost the others their news
                log.exception("a notification listener failed")

    def _snapshot(self) -> str:
        with self._lock:
            items = [item.model_dump(mode="json") for item in self._items]
        return json.dumps({"version": VERSION, "items": items}, ensure_ascii=False, indent=1)

    # -- the file --------------------------------------------------------------

    def _read(self) -> list[Notification]:
        """The stored entries; a damaged file is set aside and what can be read kept."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            return self._set_aside(f"cannot be read: {exc}", [])
        try:
            data = json.loads(text)
        except ValueError as exc:
            return self._set_aside(f"not JSON: {exc}", [])
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            return self._set_aside('not an object with a list of "items"', [])
        if data.get("version") != VERSION:
            return self._set_aside(f"unknown version {data.get('version')!r}", [])
        items, bad = [], 0
        for raw in data["items"]:
            try:
                items.append(Notification.model_validate(raw))
            except ValidationError:
                bad += 1
        if bad:
            return self._set_aside(f"{bad} damaged entr{'y' if bad == 1 else 'ies'}", items)
        return items

    def _set_aside(self, reason: str, kept: list[Notification]) -> list[Notification]:
        self._damaged = True
        aside = self.path.with_name(f"{self.path.stem}.damaged-{int(time.time())}.json")
        try:
            os.replace(self.path, aside)
            where = f"moved to {aside}"
        except OSError as exc:
            where = f"could not be moved aside ({exc})"
        log.error("notification history %s is damaged (%s); %s, keeping the %d entries that "
                  "could be read", self.path, reason, where, len(kept))  # fmt: skip
        return kept


class _Writer:
    """Writes the history's newest snapshot on a thread of its own, one write at a time; a
    change made while a write runs is written after it (never a queue of writes)."""

    def __init__(self, snapshot: Callable[[], str], path: Path) -> None:
        self._snapshot = snapshot
        self._path = path
        self._cond = threading.Condition()
        self._requested = 0  # changes asked to be written
        self._written = 0  # changes on disk
        self._stopped = False
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
                idle = not self._cond.wait_for(
                    lambda: self._requested > self._written or self._stopped, IDLE
                )
                if idle or self._requested <= self._written:
                    self._thread = None  # idle or stopped: a later change starts another
                    return
                target = self._requested
            try:
                write_text_atomic(self._path, self._snapshot() + "\n")
            except OSError:  # the next change tries again; the entries stay in memory
                log.exception("could not save the notification history to %s", self._path)
            with self._cond:
                self._written = target
                self._cond.notify_all()
