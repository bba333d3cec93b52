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

Several processes may share the file (cluster mode: a person's runs end on one node while
their page marks entries read on another). Given `shared`, a history then looks at the
file's stamp before each question and change, reads it again when another process wrote it,
and writes its own changes onto the file as it is then, under the cluster's lock of the file
(store/notification_writes.py). Changes made elsewhere are not told to this process's
listeners: the process that made them told every page, through the cluster's message queue.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from helpers.files import write_text_atomic
from helpers.shared_files import SharedLocks, Stamp, stamp_at, stamp_of
from store.notification_writes import Added, Cleared, Edit, Read, Writer, replayed

log = logging.getLogger(__name__)

VERSION = 1
#: Entries kept: the newest; older ones drop out as new ones come.
KEPT = 200
#: Characters of a message kept (an agent's whole answer may be long; the chat has it all).
MESSAGE_LIMIT = 2000
#: Characters of a title kept.
TITLE_LIMIT = 200

#: Where a notification came from: a `notify` log item, a run that failed, a long run done.
Kind = Literal["notify", "error", "finished", "approval"]
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
    """The bounded, persisted history (thread-safe); `shared`: the other processes writing
    its file, under the cluster's lock `lock` (None: this process alone)."""

    def __init__(self, path: Path, kept: int = KEPT, shared: SharedLocks | None = None,
                 lock: str = "notifications") -> None:  # fmt: skip
        self.path = path
        self.kept = kept
        self.shared = shared
        self._lock_name = lock
        self._lock = threading.Lock()
        #: Held while the file is read or written (milliseconds), never while waiting on
        #: the cluster: a question does not read a file this process is writing.
        self._file = threading.Lock()
        #: Shared: this process's changes not yet in the file, and the file's stamp when
        #: last read or written.
        self._edits: list[Edit] = []
        self._stamp: Stamp | None = None
        self._listeners: list[Listener] = []
        self._writer = Writer(self._save if shared is None else self._save_shared, str(path))
        items, self._stamp, damaged = self._read()
        self._items: list[Notification] = items[-kept:]  # oldest first
        if damaged and self._items:
            self._saved_again(self._items)

    # -- reading ---------------------------------------------------------------

    def items(self) -> list[Notification]:
        """Every entry, newest first."""
        with self._current():
            return [item.model_copy() for item in reversed(self._items)]

    def unread(self) -> int:
        with self._current():
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
        with self._current():
            self._items.append(item)
            del self._items[: -self.kept]
            self._edit(Added(item.model_copy()))
            change = Change("added", self._count(), item=item.model_copy())
        self._changed(change)
        return item

    def mark_read(self, ids: Iterable[str] | None = None) -> list[str]:
        """Mark the entries `ids` read (all when None); the ids that were unread."""
        wanted = None if ids is None else set(ids)
        with self._current():
            marked = []
            for item in self._items:
                if not item.read and (wanted is None or item.id in wanted):
                    item.read = True
                    marked.append(item.id)
            if marked:
                self._edit(Read(frozenset(marked)))
            change = Change("read", self._count(), ids=marked)
        if marked:
            self._changed(change)
        return marked

    def clear(self) -> None:
        """Forget every entry (those shown: another process's newer ones stay)."""
        with self._current():
            self._edit(Cleared(frozenset(item.id for item in self._items)))
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

    def _edit(self, edit: Edit) -> None:
        """Keep `edit` for the next write (under `_lock`; shared only: alone, the writer
        writes the whole history)."""
        if self.shared is not None:
            self._edits.append(edit)

    def _changed(self, change: Change) -> None:
        self._writer.request()
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # a listener's failure must not cost the others their news
                log.exception("a notification listener failed")

    # -- the file --------------------------------------------------------------

    @contextlib.contextmanager
    def _current(self) -> Iterator[None]:
        """`_lock`, the entries read again first when shared and another process wrote the
        file since."""
        if self.shared is not None:
            with self._file:
                if stamp_at(self.path) != self._stamp:
                    items, stamp, damaged = self._read()
                    with self._lock:
                        self._stamp = stamp
                        self._items = replayed(items, self._edits, self.kept)
                    if damaged and items:
                        self._saved_again(items)
        with self._lock:
            yield

    def _saved_again(self, items: list[Notification]) -> None:
        """The entries read from a file set aside, written again."""
        if self.shared is not None:
            with self._lock:
                self._edits[:0] = [Added(item) for item in items]
        self._writer.request()

    def _save(self) -> None:
        """Alone: the whole history."""
        with self._lock:
            items = [item.model_dump(mode="json") for item in self._items]
        text = json.dumps({"version": VERSION, "items": items}, ensure_ascii=False, indent=1)
        write_text_atomic(self.path, text + "\n")

    def _save_shared(self) -> None:
        """Shared: this process's changes made to the file as it is now, under the
        cluster's lock of the file."""
        assert self.shared is not None
        with self.shared.shared_lock(self._lock_name), self._file:
            with self._lock:
                edits = list(self._edits)
            items = replayed(self._read()[0], edits, self.kept)
            rows = [item.model_dump(mode="json") for item in items]
            text = json.dumps({"version": VERSION, "items": rows}, ensure_ascii=False, indent=1)
            write_text_atomic(self.path, text + "\n")
            with self._lock:
                del self._edits[: len(edits)]
                self._stamp = stamp_at(self.path)
                self._items = replayed(items, self._edits, self.kept)

    def _read(self) -> tuple[list[Notification], Stamp | None, bool]:
        """The stored entries, the stamp of the file read, and whether it was damaged (set
        aside: what could be read of it is kept)."""
        try:
            with self.path.open(encoding="utf-8") as source:
                stamp = stamp_of(os.fstat(source.fileno()))
                text = source.read()
        except FileNotFoundError:
            return [], None, False
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
        return items, stamp, False

    def _set_aside(self, reason: str, kept: list[Notification]
                   ) -> tuple[list[Notification], None, bool]:  # fmt: skip
        aside = self.path.with_name(f"{self.path.stem}.damaged-{int(time.time())}.json")
        try:
            os.replace(self.path, aside)
            where = f"moved to {aside}"
        except OSError as exc:
            where = f"could not be moved aside ({exc})"
        log.error("notification history %s is damaged (%s); %s, keeping the %d entries that "
                  "could be read", self.path, reason, where, len(kept))  # fmt: skip
        return kept, None, True
