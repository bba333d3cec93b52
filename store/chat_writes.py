"""Writing chats behind the agents: each chat's newest snapshot, in order, one write at a time.

A chat is saved after every loop iteration. The snapshot is taken on the
agents' loop at once (that is what makes it consistent), but writing it
(JSON, a temporary file, fsync, rename) took 8-12 ms a step on this machine,
and the agent waited for it. Here the write happens in a worker thread while
the agent goes on; whoever needs the file on disk (the end of a run, a
rename, shutdown) awaits the future `submit` returns.

Order is kept per chat: a snapshot is never written after a newer one. A
snapshot still waiting while an older one is being written is replaced by
the newer (the newer holds all it held), so a chat that changes faster than
the disk writes costs one write at a time, never a queue.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from core.chat_record import ChatFile
from store import persist_chat


@dataclass
class _Queue:
    """One chat's newest snapshot not written yet, who waits for it, and the writing task."""

    pending: ChatFile | None = None
    #: Where `pending` goes: fixed when it was given (usr/ is read then, not in the thread).
    path: Path | None = None
    waiters: list[asyncio.Future[str]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


class ChatWrites:
    """Writes snapshots of many chats, each chat's in order (call on the agents' loop)."""

    def __init__(self) -> None:
        self._queues: dict[str, _Queue] = {}

    def submit(self, chat: ChatFile) -> asyncio.Future[str]:
        """Write `chat` soon; the future settles once it (or a newer snapshot) is on disk,
        with what had to be repaired, or with the write's error."""
        queue = self._queues.setdefault(chat.id, _Queue())
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        queue.pending = chat  # an older snapshot still waiting is superseded by this one
        queue.path = persist_chat.chat_file(chat.id)
        queue.waiters.append(done)
        if queue.task is None or queue.task.done():
            queue.task = asyncio.ensure_future(self._drain(chat.id, queue))
        return done

    async def _drain(self, chat_id: str, queue: _Queue) -> None:
        while queue.pending is not None:
            chat, path, waiters = queue.pending, queue.path, queue.waiters
            queue.pending, queue.waiters = None, []
            try:
                # Shielded: a cancelled waiter (a stopped run) must not stop the write itself.
                writing = asyncio.to_thread(persist_chat.write_chat, chat, path)
                repairs = await asyncio.shield(writing)
            except asyncio.CancelledError:
                # The loop is stopping (shutdown saves what it must before): the write
                # may still finish in its thread; nobody is left to hear of it.
                for waiter in waiters:
                    waiter.cancel()
                raise
            except Exception as exc:  # noqa: BLE001 - handed to whoever waits for this write
                _settle(waiters, error=exc)
            else:
                _settle(waiters, repairs=repairs)
        if self._queues.get(chat_id) is queue:
            del self._queues[chat_id]

    async def settle(self, chat_id: str) -> None:
        """Drop what waits to be written for `chat_id` and wait for the write going on
        (the chat is being deleted: nothing may bring its folder back)."""
        queue = self._queues.pop(chat_id, None)
        if queue is None:
            return
        _settle(queue.waiters, repairs="")
        queue.pending, queue.waiters = None, []
        if queue.task is not None and not queue.task.done():
            await asyncio.wait({queue.task})

    def writing(self) -> int:
        """Chats with a write going on or waiting (for tests and benchmarks)."""
        return sum(1 for q in self._queues.values() if q.task is not None and not q.task.done())


def _settle(
    waiters: list[asyncio.Future[str]], repairs: str = "", error: BaseException | None = None
) -> None:
    for waiter in waiters:
        if waiter.done():
            continue
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(repairs)
