"""A2A tasks kept on disk, each owner's apart: the SDK's `TaskStore` over usr/a2a/tasks/,
so `tasks/get` and `tasks/list` answer after a restart, and on any node of a cluster
sharing usr/ (the SDK's own store kept them in memory: lost at a restart, and never let go
while the server ran).

One file a task, `usr/a2a/tasks/<owner>/<task>.json` (both names hashes, so no owner or
task id a client chose can name a path), written whole and atomically (0600) at each change
the SDK saves: `{"version": 1, "node": ..., "started": ..., "task": <the Task as JSON>}`,
`node` and `started` naming the process that saved it. A task left working by a process
that is gone (stopped, or a node no longer in the cluster) can never end: it is reported,
and written back, `failed` in words that say its chat is kept and how to go on. Past KEPT
tasks an owner's least recently changed ones are forgotten (their chats stay). A file that
cannot be read is a task not found, and a line in the log.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError

from helpers.files import usr_path, write_text_atomic

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext

    from cluster.node import Node

log = logging.getLogger(__name__)

VERSION = 1
#: The folder under usr/.
FOLDER = "a2a/tasks"
#: Tasks kept per owner; past it the least recently changed go.
KEPT = 1000
#: States after which a task never changes.
DONE = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED,
                  TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED})  # fmt: skip
#: What a task left working by a process that is gone says.
ORPHANED = ("Cadre stopped while this task ran, so it will not finish. Its chat is kept: "
            "send a message in the same context to go on.")  # fmt: skip


def _name(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class FileTaskStore(TaskStore):
    """The tasks of each owner (the key's owner, `context.user.user_name`) in files."""

    def __init__(self, node: Node, folder: Path | None = None, kept: int = KEPT) -> None:
        self.node = node
        self.folder = folder or usr_path(FOLDER)
        self.kept = kept

    # The SDK's interface: the files are read and written in a worker thread, off the loop.
    async def save(self, task: Task, context: ServerCallContext) -> None:
        await asyncio.to_thread(self._save, self._owner(context), task)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await asyncio.to_thread(self._get, self._owner(context), task_id)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        # The SDK's own store filters, orders and pages: it is given this owner's tasks.
        page = InMemoryTaskStore()
        for task in await asyncio.to_thread(self._all, self._owner(context)):
            await page.save(task, context)
        return await page.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        path = self._path(self._owner(context), task_id)
        await asyncio.to_thread(path.unlink, missing_ok=True)

    # The files.
    def _owner(self, context: ServerCallContext) -> Path:
        return self.folder / _name(context.user.user_name or "")

    def _path(self, owner: Path, task_id: str) -> Path:
        return owner / f"{_name(task_id)}.json"

    def _save(self, owner: Path, task: Task) -> None:
        path = self._path(owner, task.id)
        new = not path.exists()
        record = {"version": VERSION, "node": self.node.config.node_id,
                  "started": self.node.started, "task": MessageToDict(task)}  # fmt: skip
        write_text_atomic(path, json.dumps(record) + "\n", mode=0o600)
        if new:
            self._forget_old(owner)

    def _get(self, owner: Path, task_id: str) -> Task | None:
        record = self._read(self._path(owner, task_id))
        return self._as_it_stands(record) if record else None

    def _all(self, owner: Path) -> list[Task]:
        try:
            paths = [Path(entry.path) for entry in os.scandir(owner)
                     if entry.name.endswith(".json")]  # fmt: skip
        except FileNotFoundError:
            return []
        return [self._as_it_stands(record) for path in paths if (record := self._read(path))]

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            record["task"] = ParseDict(record["task"], Task(), ignore_unknown_fields=True)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError, ParseError) as exc:
            log.error("A2A task file %s cannot be read (%s): that task is not found until"
                      " the file is repaired or removed", path, exc)  # fmt: skip
            return None
        record["path"] = path
        return record

    def _as_it_stands(self, record: dict[str, Any]) -> Task:
        """The task, `failed` if it was left working by a process that is gone."""
        task: Task = record["task"]
        if task.status.state in DONE or self._alive(record):
            return task
        log.warning("A2A task %s was left working by a Cadre that stopped; it is marked failed",
                    task.id[:64])  # fmt: skip
        task.status.state = TaskState.TASK_STATE_FAILED
        task.status.message.CopyFrom(Message(
            role=Role.ROLE_AGENT, message_id=f"{task.id}-orphaned", task_id=task.id,
            context_id=task.context_id, parts=[Part(text=ORPHANED)],
        ))  # fmt: skip
        task.status.timestamp.GetCurrentTime()
        try:
            self._save(record["path"].parent, task)
        except OSError as exc:  # told as failed all the same; the next read tries again
            log.error("A2A task %s could not be marked failed on disk: %s", task.id[:64], exc)
        return task

    def _alive(self, record: dict[str, Any]) -> bool:
        """Whether the process that saved the task still runs (unknown: taken as yes)."""
        try:
            nodes = self.node.nodes()
        except Exception:  # Redis not answering: the task is told as it was saved
            return True
        return any(n.node == record.get("node") and n.started == record.get("started")
                   for n in nodes)  # fmt: skip

    def _forget_old(self, owner: Path) -> None:
        """Past `kept` tasks, the least recently changed go (their chats stay)."""
        try:
            entries = [e for e in os.scandir(owner) if e.name.endswith(".json")]
        except FileNotFoundError:
            return
        if len(entries) <= self.kept:
            return
        entries.sort(key=_changed)
        for entry in entries[: len(entries) - self.kept]:
            Path(entry.path).unlink(missing_ok=True)


def _changed(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except FileNotFoundError:  # another node forgot it meanwhile
        return 0.0
