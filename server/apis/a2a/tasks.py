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
(server/apis/a2a/task_files.py, with the folders' layout).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from a2a.server.cluster import ConcurrentTaskModificationError
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
from a2a.utils.task import ListTasksCursor, encode_list_tasks_cursor

from helpers.files import usr_path, write_bytes_atomic
from server.apis.a2a.task_files import (
    DONE,
    FOLDER,
    VERSION,
    About,
    changed,
    changed_at,
    gone_list,
    name_of,
    owner_folder,
)

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext

    from cluster.node import Node

log = logging.getLogger(__name__)

#: Tasks kept per owner, and their bytes; past either the least recently changed go.
KEPT = 1000
KEPT_BYTES = 256 * 1024 * 1024
#: A temporary file (or a task without its small file) older than this is a crash's
#: leftover, removed.
STALE_SECONDS = 3600.0
#: Seconds a task of this process may go unsaved after its run ended and still be taken
#: as running (the SDK saves its last events after the executor returns).
GRACE_SECONDS = 10.0
#: Bytes of whole tasks one page of a list reads, at most (past it the page ends early,
#: and its token leads on): a page of 100 tasks of files sent in could be gigabytes.
PAGE_BYTES = 32 * 1024 * 1024
#: What a task left working by a process that is gone says.
ORPHANED = ("The Cadre that ran this task stopped, so it gets no more updates. Its chat is "
            "kept (in a cluster another node may finish the run there): send a message in "
            "the same context to see how it stands or to go on.")  # fmt: skip


#: The ids of the tasks this process runs now.
Running = Callable[[], set[str]]
#: Told of a task another node cancelled, with its owner, as a save of it comes.
Cancelled = Callable[[Task, str], None]


class FileTaskStore(TaskStore):
    """The tasks of each owner (the key's owner, `context.user.user_name`) in files.

    `running()` gives the ids of the tasks this process runs now (the executor's): one of
    this process's tasks that no longer runs, and was not saved for GRACE_SECONDS, is
    gone too (a save that failed, a backup restored under it). `cancelled_elsewhere(task,
    owner)` is told when a save finds its task cancelled by another node: the run here
    stops, and the SDK hears it as the protocol says (`ConcurrentTaskModificationError`).
    """

    def __init__(self, node: Node, folder: Path | None = None, kept: int = KEPT,
                 kept_bytes: int = KEPT_BYTES, running: Running | None = None,
                 cancelled_elsewhere: Cancelled | None = None) -> None:  # fmt: skip
        self.node = node
        self.folder = folder or usr_path(FOLDER)
        self.kept = kept
        self.kept_bytes = kept_bytes
        self.running = running
        self.cancelled_elsewhere = cancelled_elsewhere
        #: Unreadable files already told in the log (path, change time).
        self._told: set[tuple[str, int]] = set()

    # The SDK's interface: the files are read and written in a worker thread, off the loop.
    async def save(self, task: Task, context: ServerCallContext) -> None:
        owner = context.user.user_name or ""
        await asyncio.to_thread(self._save, owner, task)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await asyncio.to_thread(self._get, self._owner(context), task_id)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        owner = self._owner(context)
        abouts, gone = await asyncio.to_thread(self._abouts_and_gone, owner)
        # The SDK's own store filters, orders and pages: it is given each task's small part.
        light = InMemoryTaskStore()
        for about in abouts.values():
            await light.save(_light(about, about.id in gone), context)
        page = await light.list(params, context)
        wanted = [abouts[t.id] for t in page.tasks]
        full, cut = await asyncio.to_thread(self._page, wanted, gone)
        del page.tasks[:]
        page.tasks.extend(full)  # one forgotten meanwhile is left out of its page
        if cut is not None:  # ended early: the next page begins after its last task
            page.next_page_token = encode_list_tasks_cursor(
                ListTasksCursor(timestamp_ns=cut.at or None, task_id=cut.id)
            )
        return page

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        owner = self._owner(context)
        await asyncio.to_thread(self._forget, owner / name_of(task_id))

    # The files.
    def _owner(self, context: ServerCallContext) -> Path:
        return owner_folder(context.user.user_name, self.folder)

    def _save(self, name: str, task: Task) -> None:
        owner = owner_folder(name, self.folder)
        base = owner / name_of(task.id)
        # One save at a time across the cluster: a task's two files go together, and the
        # check that it has not ended holds until the write.
        with self.node.shared_lock("a2a-tasks"):
            if name_of(task.id) in gone_list(owner):
                log.info("A2A task %s belonged to a deleted account: not saved", task.id[:64])
                return
            before = self._about(base.with_suffix(".json"))
            refused = before is not None and before.done and task.status.state != before.state
            if not refused:
                self._write(base, task)
        if refused:
            assert before is not None
            self._ended_before(task, before, name)  # out of the lock: it may stop a run
        if before is None or task.status.state in DONE:
            try:
                self._forget_old(owner, task.id)
            except Exception:  # the task is saved: its owner's old ones go another time
                log.exception("A2A: old tasks could not be forgotten now")

    def _write(self, base: Path, task: Task) -> None:
        """The task's two files, whole: its bytes, then what a list reads of it."""
        data = task.SerializeToString()
        ended = task.status.state in DONE  # flushed to disk: the answer must survive
        at = task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else 0
        about = {"version": VERSION, "id": task.id, "context": task.context_id,
                 "state": int(task.status.state), "at": at, "size": len(data),
                 "node": self.node.config.node_id, "started": self.node.started}  # fmt: skip
        write_bytes_atomic(base.with_suffix(".task"), data, 0o600, fsync=ended)
        text = json.dumps(about) + "\n"
        write_bytes_atomic(base.with_suffix(".json"), text.encode(), 0o600, fsync=ended)

    def _ended_before(self, task: Task, before: About, owner: str) -> None:
        """A save of a task that ended already: never kept (the protocol never changes an
        ended task). Cancelled by another node: the run here is told to stop, and the SDK
        hears it as its versioned stores say (it reloads the task and ends its stream)."""
        log.info("A2A task %s ended as %s: a later change is not kept", task.id[:64],
                 TaskState.Name(before.state))  # fmt: skip
        if before.state == TaskState.TASK_STATE_CANCELED and self.cancelled_elsewhere:
            try:
                self.cancelled_elsewhere(task, owner)
            except Exception:  # the task stays cancelled all the same
                log.exception("A2A task %s: its run could not be stopped", task.id[:64])
        raise ConcurrentTaskModificationError(task.id)

    def _get(self, owner: Path, task_id: str) -> Task | None:
        about = self._about(owner / f"{name_of(task_id)}.json")
        if about is None or about.id != task_id:
            return None
        found, _ = self._page([about], self._gone_of({about.id: about}))
        return found[0] if found else None

    def _page(self, abouts: list[About], gone: set[str]) -> tuple[list[Task], About | None]:
        """The whole tasks `abouts` name (one unreadable or forgotten meanwhile: left out),
        those of a process that is gone told `failed`; past PAGE_BYTES the rest are left
        for the next page, and the last task read is given to lead on to it."""
        found: list[Task] = []
        read = 0
        for number, about in enumerate(abouts):
            if found and read + about.size > PAGE_BYTES:
                return found, abouts[number - 1]
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
            read += about.size
            # The task's own state first: a crash between its two files may have left
            # the small one behind (an answer is never told lost).
            gone_here = about.id in gone and task.status.state not in DONE
            found.append(_orphaned(task) if gone_here else task)
        return found, None

    def _abouts_and_gone(self, owner: Path) -> tuple[dict[str, About], set[str]]:
        abouts = self._abouts(owner)
        return abouts, self._gone_of(abouts)

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
        """The tasks of `abouts` left working by a process that is gone, or by this one
        when it no longer runs them (blocking: it may ask Redis)."""
        working = [a for a in abouts.values() if not a.done]
        if not working:
            return set()
        me, started = self.node.config.node_id, self.node.started
        mine = [a for a in working if (a.node, a.started) == (me, started)]
        others = [a for a in working if a.node != me]
        alive: set[tuple[str, float]] = {(me, started)}
        if others:
            try:
                alive |= {(n.node, n.started) for n in self.node.nodes()}
            except Exception:  # Redis not answering: the others are told as they were saved
                alive |= {(a.node, a.started) for a in others}
        gone = {a.id for a in working if (a.node, a.started) not in alive}
        if mine and self.running is not None:
            runs, now = self.running(), time.time()
            gone |= {a.id for a in mine
                     if a.id not in runs and now - changed(a) > GRACE_SECONDS}  # fmt: skip
        for task_id in sorted(gone):  # rare: each read whole, its small file put right
            ended = self._ended_state(abouts[task_id])
            if ended is not None:
                gone.discard(task_id)
                abouts[task_id] = replace(abouts[task_id], state=ended)
        return gone

    def _ended_state(self, about: About) -> int | None:
        """The state the task's own file says, when it ended though its small file says
        not (a crash between the two writes): the small file is written again. Read only
        when the two files look apart (another size, or the task written after)."""
        whole = about.path.with_suffix(".task")
        try:
            apart = whole.stat().st_size != about.size or changed_at(str(whole)) > changed(about)
        except OSError:
            return None
        if not apart:
            return None
        try:
            task = Task.FromString(whole.read_bytes())
        except Exception:  # noqa: BLE001 - unreadable: told gone, as the small file says
            return None
        if task.id != about.id or task.status.state not in DONE:
            return None
        with self.node.shared_lock("a2a-tasks"):
            if self._about(about.path) == about:  # nobody saved it meanwhile
                self._write(about.path.with_suffix(""), task)
        return int(task.status.state)

    def _forget(self, base: Path) -> None:
        for suffix in (".json", ".task"):  # the small file first: a list no longer sees it
            base.with_suffix(suffix).unlink(missing_ok=True)

    def _forget_old(self, owner: Path, saved: str) -> None:
        """Past `kept` tasks or `kept_bytes`, the least recently changed ended ones (or
        gone ones) go, never the one just `saved`; a crash's leftovers are removed."""
        abouts = self._abouts(owner)
        total = sum(a.size for a in abouts.values())
        if len(abouts) > self.kept or total > self.kept_bytes:
            gone = self._gone_of(abouts)  # asked only when some must go (it may ask Redis)
            over = [a for a in abouts.values() if (a.done or a.id in gone) and a.id != saved]
            count = len(abouts)
            for about in sorted(over, key=changed):
                if count <= self.kept and total <= self.kept_bytes:
                    break
                self._forget(about.path.with_suffix(""))
                count, total = count - 1, total - about.size
        now = time.time()
        for entry in os.scandir(owner):
            leftover = entry.name.endswith(".tmp") or (
                entry.name.endswith(".task") and not os.path.exists(entry.path[:-5] + ".json")
            )
            if leftover and now - changed_at(entry.path) > STALE_SECONDS:
                Path(entry.path).unlink(missing_ok=True)


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
