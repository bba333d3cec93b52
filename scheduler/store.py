"""The tasks on disk: usr/scheduler/tasks.json, written atomically after every change.

The file is versioned (`{"version": 1, "tasks": [...]}`). A file that cannot be read
is set aside (renamed `tasks.json.damaged-<time>`) and reported, never fatal and
never overwritten: what it held can still be recovered by hand.

Several processes may share the file (cluster mode: the nodes' one usr/ folder; the
server then gives the store its node as `shared`). Each change is then a read-modify-write
under the cluster's lock `tasks`, the file read again first when it changed on disk since
this process last read or wrote it; every read looks for such a change too. A change is
told by the file's stamp (inode, modification time in ns, size): a write replaces the file
by a new one made beside it, so each write gives a new inode. A process alone (no
`shared`) costs what it did: the file is read at start and after a restore, never stat'ed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from helpers.errors import NotFound
from helpers.files import usr_path, write_text_atomic
from scheduler.coordination import Coordination
from scheduler.tasks import Task

log = logging.getLogger(__name__)

#: The version of the file's format (a change of shape gets a number and a migration).
VERSION = 1


#: The cluster's lock each change of the file is made under.
LOCK = "tasks"

#: What tells one version of the file from another: (inode, mtime in ns, size).
Stamp = tuple[int, int, int]


def tasks_file() -> Path:
    return usr_path("scheduler", "tasks.json")


def stamp_of(stat: os.stat_result) -> Stamp:
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


class TaskStore:
    """The tasks by id; safe to use from any thread (each change is saved before it returns)
    and, given `shared`, from several processes sharing the file."""

    def __init__(self, path: Path | None = None, shared: Coordination | None = None) -> None:
        self.path = path or tasks_file()
        #: The other processes writing the file (cluster mode); None: this process alone.
        self.shared = shared
        self._lock = threading.RLock()
        #: The file's stamp when this process last read or wrote it (None: there was none).
        self._stamp: Stamp | None = None
        #: Whether the cluster's lock is held now (by the thread holding `_lock`).
        self._locked = False
        self._tasks: dict[str, Task] = self._load()

    def _load(self) -> dict[str, Task]:
        self._stamp = None
        stamp: Stamp | None = None
        try:
            with self.path.open(encoding="utf-8") as source:
                # The stamp of the very file read: one written after it is told apart.
                stamp = stamp_of(os.fstat(source.fileno()))
                document = json.loads(source.read())
            if not isinstance(document, dict) or document.get("version") != VERSION:
                raise ValueError(f"not a version {VERSION} tasks file")
            tasks = [Task.model_validate(item) for item in document.get("tasks", [])]
        except FileNotFoundError:
            return {}
        # RecursionError: JSON nested deeper than the parser follows (a file made by hand).
        except (OSError, ValueError, ValidationError, RecursionError) as exc:
            self._set_aside(exc, stamp)
            return {}
        self._stamp = stamp
        return {task.id: task for task in tasks}

    def _set_aside(self, exc: Exception, stamp: Stamp | None) -> None:
        if self.shared is not None and stamp is not None and self._on_disk() != stamp:
            return  # another process wrote a new file since: read at the next look
        aside = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
        try:
            self.path.replace(aside)
        except FileNotFoundError:
            return  # another process sharing it set it aside first
        log.error("the scheduler's tasks file could not be read (%s); set aside as %s",
                  exc, aside)  # fmt: skip

    def _fresh(self) -> None:
        """Shared: the file read again when another process replaced it since (under
        `_lock`)."""
        if self.shared is not None and self._on_disk() != self._stamp:
            self._tasks = self._load()

    def _on_disk(self) -> Stamp | None:
        """The stamp of the file there now (None: there is none)."""
        try:
            return stamp_of(self.path.stat())
        except FileNotFoundError:
            return None

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """This process's lock, and when shared, the cluster's too with the file read again
        if it changed: no other writer comes between the read and the write."""
        with self._lock:
            if self.shared is None or self._locked:
                yield
                return
            with self.shared.shared_lock(LOCK):
                self._locked = True
                try:
                    self._fresh()
                    yield
                finally:
                    self._locked = False

    @contextmanager
    def held(self) -> Iterator[None]:
        """No change (and no read) of the tasks by others while this lasts, and the file
        read again at its end: a restore replaces it meanwhile (server/routes/backups.py)."""
        with self._lock:
            try:
                yield
            finally:
                self.reload()

    def reload(self) -> None:
        """Read the file again (after something else replaced it: a backup restored)."""
        with self._lock:
            self._tasks = self._load()

    def all(self) -> list[Task]:
        with self._lock:
            self._fresh()
            return sorted(self._tasks.values(), key=lambda t: (t.created_at, t.id))

    def get(self, task_id: str) -> Task:
        with self._lock:
            self._fresh()
            return self._get(task_id)

    def _get(self, task_id: str) -> Task:
        task = self._tasks.get(task_id)
        if task is None:
            raise NotFound(f"no task {task_id!r}")
        return task

    def put(self, task: Task) -> Task:
        """Add or replace `task` (by its id)."""
        with self._changing():
            self._commit({**self._tasks, task.id: task})
        return task

    def update(self, task_id: str, change: Callable[[Task], Task]) -> Task:
        """Replace the task by `change(task)`, atomically with respect to other changes (of
        every process sharing the file); NotFound when it is gone (deleted meanwhile)."""
        with self._changing():
            changed = change(self._get(task_id))
            self._commit({**self._tasks, task_id: changed})
        return changed

    def remove(self, task_id: str) -> Task:
        with self._changing():
            task = self._get(task_id)
            self._commit({k: v for k, v in self._tasks.items() if k != task_id})
        return task

    def _commit(self, tasks: dict[str, Task]) -> None:
        # On disk first: a write that fails changes nothing, in memory either.
        rows = [task.model_dump(mode="json") for task in tasks.values()]
        document = {"version": VERSION, "tasks": rows}
        write_text_atomic(self.path, json.dumps(document, indent=2, ensure_ascii=False))
        self._tasks = tasks
        if self.shared is not None:  # under the cluster's lock: nobody replaced it since
            self._stamp = stamp_of(self.path.stat())
