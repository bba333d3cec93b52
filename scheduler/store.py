"""The tasks on disk: usr/scheduler/tasks.json, written atomically after every change.

The file is versioned (`{"version": 1, "tasks": [...]}`). A file that cannot be read
is set aside (renamed `tasks.json.damaged-<time>`) and reported, never fatal and
never overwritten: what it held can still be recovered by hand.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from helpers.errors import NotFound
from helpers.files import usr_path, write_text_atomic
from scheduler.tasks import Task

log = logging.getLogger(__name__)

#: The version of the file's format (a change of shape gets a number and a migration).
VERSION = 1


def tasks_file() -> Path:
    return usr_path("scheduler", "tasks.json")


class TaskStore:
    """The tasks by id; safe to use from any thread (each change is saved before it returns)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or tasks_file()
        self._lock = threading.RLock()
        self._tasks: dict[str, Task] = self._load()

    def _load(self) -> dict[str, Task]:
        if not self.path.exists():
            return {}
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(document, dict) or document.get("version") != VERSION:
                raise ValueError(f"not a version {VERSION} tasks file")
            tasks = [Task.model_validate(item) for item in document.get("tasks", [])]
        # RecursionError: JSON nested deeper than the parser follows (a file made by hand).
        except (OSError, ValueError, ValidationError, RecursionError) as exc:
            aside = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
            self.path.replace(aside)
            log.error("the scheduler's tasks file could not be read (%s); set aside as %s",
                      exc, aside)  # fmt: skip
            return {}
        return {task.id: task for task in tasks}

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
            return sorted(self._tasks.values(), key=lambda t: (t.created_at, t.id))

    def get(self, task_id: str) -> Task:
        with self._lock:
            task = self._tasks.get(task_id)
        if task is None:
            raise NotFound(f"no task {task_id!r}")
        return task

    def put(self, task: Task) -> Task:
        """Add or replace `task` (by its id)."""
        with self._lock:
            self._commit({**self._tasks, task.id: task})
        return task

    def update(self, task_id: str, change: Callable[[Task], Task]) -> Task:
        """Replace the task by `change(task)`, atomically with respect to other changes;
        NotFound when it is gone (deleted meanwhile)."""
        with self._lock:
            changed = change(self.get(task_id))
            self._commit({**self._tasks, task_id: changed})
        return changed

    def remove(self, task_id: str) -> Task:
        with self._lock:
            task = self.get(task_id)
            self._commit({k: v for k, v in self._tasks.items() if k != task_id})
        return task

    def _commit(self, tasks: dict[str, Task]) -> None:
        # On disk first: a write that fails changes nothing, in memory either.
        rows = [task.model_dump(mode="json") for task in tasks.values()]
        document = {"version": VERSION, "tasks": rows}
        write_text_atomic(self.path, json.dumps(document, indent=2, ensure_ascii=False))
        self._tasks = tasks
