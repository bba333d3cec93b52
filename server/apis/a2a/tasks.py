"""A2A tasks kept on disk, each owner's apart: the SDK's `TaskStore` over usr/a2a/tasks/,
so `tasks/get` and `tasks/list` answer after a restart, and on any node of a cluster
sharing usr/ (the SDK's own store kept them in memory: lost at a restart, and never let go
while the server ran).

Two files a task in `usr/a2a/tasks/<owner>/` (both names hashes, so no owner or task id a
client chose can name a path), each written whole and atomically (0600):
`<task>.task`, the Task as the protocol's own bytes (what a client sent comes back as it
was, NaN and all), and `<task>.json`, a few fields about it (`id`, `context`, `state`,
`at`, `size`, and the `node` and `started` of the process that saved it). A list reads the
small files alone to filter, order and page, and then only the page's tasks; a save is
flushed to disk when the task ends (a crash of the machine may lose the steps before).

A task is not changed once it ended (the protocol's rule): a late save of a task another
node cancelled leaves it cancelled. A task left working by a process that is gone (this
node started again, or a node no longer among the cluster's living) can never end: it is
told `failed`, in words that say its chat is kept and how to go on. Past KEPT tasks, or
KEPT_BYTES, an owner's least recently changed ended tasks are forgotten (their chats
stay); a task that works is kept. An unreadable file is a task not found, and one line in
the log. When an account is deleted its tasks go with it, or to the heir of its chats
(`hand_over`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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

from helpers.files import usr_path, write_bytes_atomic

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext

    from cluster.node import Node

log = logging.getLogger(__name__)

VERSION = 1
#: The folder under usr/.
FOLDER = "a2a/tasks"
#: Tasks kept per owner, and their bytes; past either the least recently changed go.
KEPT = 1000
KEPT_BYTES = 256 * 1024 * 1024
#: A temporary file older than this is a crash's leftover, removed.
STALE_SECONDS = 3600.0
#: States after which a task never changes.
DONE = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED,
                  TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED})  # fmt: skip
#: What a task left working by a process that is gone says.
ORPHANED = ("The Cadre that ran this task stopped, so it gets no more updates. Its chat is "
            "kept (in a cluster another node may finish the run there): send a message in "
            "the same context to see how it stands or to go on.")  # fmt: skip


def _name(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def owner_folder(owner: str | None, folder: Path | None = None) -> Path:
    """The folder of `owner`'s tasks ("" or None: the desktop mode's one person)."""
    return (folder or usr_path(FOLDER)) / _name(owner or "")


@dataclass(frozen=True)
class About:
    """A task's small file: what a list filters, orders and pages by."""

    id: str
    context: str
    state: int
    #: The status's time, in nanoseconds (0: none).
    at: int
    size: int
    node: str
    started: float
    path: Path

    @property
    def done(self) -> bool:
        return self.state in DONE


class FileTaskStore(TaskStore):
    """The tasks of each owner (the key's owner, `context.user.user_name`) in files."""

    def __init__(self, node: Node, folder: Path | None = None, kept: int = KEPT,
                 kept_bytes: int = KEPT_BYTES) -> None:  # fmt: skip
        self.node = node
        self.folder = folder or usr_path(FOLDER)
        self.kept = kept
        self.kept_bytes = kept_bytes
        #: Unreadable files already told in the log (path, change time).
        self._told: set[tuple[str, int]] = set()

    # The SDK's interface: the files are read and written in a worker thread, off the loop.
    async def save(self, task: Task, context: ServerCallContext) -> None:
        await asyncio.to_thread(self._save, self._owner(context), task)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await asyncio.to_thread(self._get, self._owner(context), task_id)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        owner = self._owner(context)
        abouts = await asyncio.to_thread(self._abouts, owner)
        gone = self._gone_of(abouts)
        # The SDK's own store filters, orders and pages: it is given each task's small part.
        light = InMemoryTaskStore()
        for about in abouts.values():
            await light.save(_light(about, about.id in gone), context)
        page = await light.list(params, context)
        full = await asyncio.to_thread(self._tasks, [abouts[t.id] for t in page.tasks], gone)
        del page.tasks[:]
        page.tasks.extend(full)  # one forgotten meanwhile is left out of its page
        return page

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        owner = self._owner(context)
        await asyncio.to_thread(self._forget, owner / _name(task_id))

    # The files.
    def _owner(self, context: ServerCallContext) -> Path:
        return owner_folder(context.user.user_name, self.folder)

    def _save(self, owner: Path, task: Task) -> None:
        base = owner / _name(task.id)
        # One save at a time across the cluster: a task's two files go together, and the
        # check that it has not ended holds until the write.
        with self.node.shared_lock("a2a-tasks"):
            before = self._about(base.with_suffix(".json"))
            if before is not None and before.done and task.status.state != before.state:
                # Ended already (another node cancelled it): the protocol never changes it.
                log.info("A2A task %s ended as %s: a later change is not kept", task.id[:64],
                         TaskState.Name(before.state))  # fmt: skip
                return
            data = task.SerializeToString()
            ended = task.status.state in DONE  # flushed to disk: the answer must survive
            at = task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else 0
            about = {"version": VERSION, "id": task.id, "context": task.context_id,
                     "state": int(task.status.state), "at": at, "size": len(data),
                     "node": self.node.config.node_id, "started": self.node.started}  # fmt: skip
            write_bytes_atomic(base.with_suffix(".task"), data, 0o600, fsync=ended)
            text = json.dumps(about) + "\n"
            write_bytes_atomic(base.with_suffix(".json"), text.encode(), 0o600, fsync=ended)
        if before is None or ended:
            self._forget_old(owner, task.id)

    def _get(self, owner: Path, task_id: str) -> Task | None:
        about = self._about(owner / f"{_name(task_id)}.json")
        if about is None or about.id != task_id:
            return None
        found = self._tasks([about], self._gone_of({about.id: about}))
        return found[0] if found else None

    def _tasks(self, abouts: list[About], gone: set[str]) -> list[Task]:
        """The whole tasks `abouts` name (one unreadable or forgotten meanwhile: left out),
        those of a process that is gone told `failed`."""
        found = []
        for about in abouts:
            path = about.path.with_suffix(".task")
            try:
                task = Task.FromString(path.read_bytes())
            except FileNotFoundError:
                continue
            except Exception as exc:  # noqa: BLE001 - any damage: not found, said once
                self._unreadable(path, exc)
                continue
            if task.id != about.id:
                self._unreadable(path, ValueError(f"it holds task {task.id[:64]!r}"))
                continue
            found.append(_orphaned(task) if about.id in gone else task)
        return found

    def _abouts(self, owner: Path) -> dict[str, About]:
        try:
            paths = [Path(e.path) for e in os.scandir(owner) if e.name.endswith(".json")]
        except FileNotFoundError:
            return {}
        return {about.id: about for path in paths if (about := self._about(path))}

    def _about(self, path: Path) -> About | None:
        try:
            data = json.loads(path.read_bytes())
            return About(str(data["id"]), str(data["context"]), int(data["state"]),
                         int(data["at"]), int(data["size"]), str(data["node"]),
                         float(data["started"]), path)  # fmt: skip
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - any damage: not found, said once
            self._unreadable(path, exc)
            return None

    def _unreadable(self, path: Path, exc: Exception) -> None:
        try:
            seen = (str(path), path.stat().st_mtime_ns)
        except OSError:
            return
        if seen not in self._told:
            self._told.add(seen)
            log.error("A2A task file %s cannot be read (%s: %.200s): that task is not found"
                      " until the file is repaired or removed",
                      path, type(exc).__name__, exc)  # fmt: skip

    def _gone_of(self, abouts: dict[str, About]) -> set[str]:
        """The tasks of `abouts` left working by a process that is gone."""
        working = [a for a in abouts.values() if not a.done]
        if not working:
            return set()
        me, started = self.node.config.node_id, self.node.started
        others = [a for a in working if a.node != me]
        alive: set[tuple[str, float]] = {(me, started)}
        if others:
            try:
                alive |= {(n.node, n.started) for n in self.node.nodes()}
            except Exception:  # Redis not answering: the others are told as they were saved
                alive |= {(a.node, a.started) for a in others}
        return {a.id for a in working if (a.node, a.started) not in alive}

    def _forget(self, base: Path) -> None:
        for suffix in (".json", ".task"):  # the small file first: a list no longer sees it
            base.with_suffix(suffix).unlink(missing_ok=True)

    def _forget_old(self, owner: Path, saved: str) -> None:
        """Past `kept` tasks or `kept_bytes`, the least recently changed ended ones go (never
        the one just `saved`); temporary files a crash left are removed."""
        abouts = list(self._abouts(owner).values())
        total = sum(a.size for a in abouts)
        if len(abouts) > self.kept or total > self.kept_bytes:
            ended = sorted((a for a in abouts if a.done and a.id != saved), key=_changed)
            count = len(abouts)
            for about in ended:
                if count <= self.kept and total <= self.kept_bytes:
                    break
                self._forget(about.path.with_suffix(""))
                count, total = count - 1, total - about.size
        now = time.time()
        for entry in os.scandir(owner):
            if entry.name.endswith(".tmp") and now - _changed_at(entry.path) > STALE_SECONDS:
                Path(entry.path).unlink(missing_ok=True)


def hand_over(name: str, heir: str | None, folder: Path | None = None) -> None:
    """A deleted account's tasks: to its heir (who gets its chats), else removed, so no
    account made later under the same name reads them (server/app.py's `cadre.leaving`)."""
    source = owner_folder(name, folder)
    if not source.is_dir():
        return
    if heir is None:
        shutil.rmtree(source, ignore_errors=True)
        log.info("A2A: the tasks of %r were removed with the account", name)
        return
    target = owner_folder(heir, folder)
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if not path.name.endswith(".tmp") and not (target / path.name).exists():
            path.replace(target / path.name)
    shutil.rmtree(source, ignore_errors=True)
    log.info("A2A: the tasks of %r are %r's now", name, heir)


def _light(about: About, gone: bool) -> Task:
    """What a list filters, orders and pages by, of one task."""
    task = Task(id=about.id, context_id=about.context)
    task.status.state = TaskState.TASK_STATE_FAILED if gone else about.state  # type: ignore[assignment]
    if about.at:
        task.status.timestamp.FromNanoseconds(about.at)
    return task


def _orphaned(task: Task) -> Task:
    """`task` told failed: the process that ran it is gone (not written: a node thought
    gone while Redis forgot it is told as it is once its heartbeat is back)."""
    task.status.state = TaskState.TASK_STATE_FAILED
    task.status.message.CopyFrom(Message(
        role=Role.ROLE_AGENT, message_id=f"{task.id}-orphaned", task_id=task.id,
        context_id=task.context_id, parts=[Part(text=ORPHANED)],
    ))  # fmt: skip
    return task


def _changed(about: About) -> float:
    return _changed_at(str(about.path))


def _changed_at(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:  # another node forgot it meanwhile
        return 0.0
