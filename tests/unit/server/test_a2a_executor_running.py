"""What the A2A executor tells the task store (server/apis/a2a/executor.py): the tasks it
runs, and those that ended a moment ago (their last events are still being saved); a
cancel from another node stops the chat only of a task this process still runs."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from a2a.types.a2a_pb2 import Task

from server.apis.a2a.contexts import ContextMap
from server.apis.a2a.executor import CadreExecutor


class Stopping:
    def __init__(self) -> None:
        self.stopped: list[str] = []

    def get(self, chat_id: str, owner: str | None) -> SimpleNamespace:
        return SimpleNamespace(stop=lambda: self.stopped.append(chat_id))


def test_a_task_counts_as_running_while_it_runs_and_a_moment_after(tmp_path):
    executor = CadreExecutor(Stopping(), ContextMap(tmp_path / "contexts.json"))
    seen: list[set[str]] = []

    async def run_one(context, queue) -> None:
        seen.append(executor.running())

    executor._execute = run_one  # the run itself is another test's
    asyncio.run(executor.execute(SimpleNamespace(task_id="t1"), None))
    assert seen == [{"t1"}]
    assert executor.running() == {"t1"}  # ended just now: its last saves may come
    assert executor.running(grace=0.0) == set()


def test_a_cancel_from_elsewhere_stops_only_a_task_that_runs_here(tmp_path):
    chats = Stopping()
    contexts = ContextMap(tmp_path / "contexts.json")
    contexts.remember("ann", "ctx", "chat-1")
    executor = CadreExecutor(chats, contexts)
    executor.cancelled_elsewhere(Task(id="t1", context_id="ctx"), "ann")
    assert chats.stopped == []  # a late event of a task that ended here
    executor._running.add("t1")
    executor.cancelled_elsewhere(Task(id="t1", context_id="ctx"), "ann")
    assert chats.stopped == ["chat-1"]
