"""A2A tasks on disk (server/apis/a2a/tasks.py): each owner's apart, found again by a new
store (a restart), hostile ids kept inside the folder, a damaged file a task not found, a
task left working by a process that is gone told as failed, old tasks forgotten."""

from __future__ import annotations

import asyncio
import logging
import os
import threading

import pytest
from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import ListTasksRequest, Task, TaskState, TaskStatus

from cluster.config import ClusterConfig
from cluster.node import Alone
from server.apis.a2a.tasks import ORPHANED, FileTaskStore


class Named(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def as_user(name: str) -> ServerCallContext:
    return ServerCallContext(user=Named(name))


def task(task_id: str, state: int = TaskState.TASK_STATE_COMPLETED, context: str = "c1") -> Task:
    made = Task(id=task_id, context_id=context, status=TaskStatus(state=state))
    made.status.timestamp.GetCurrentTime()
    return made


def process() -> Alone:
    return Alone(ClusterConfig(node_id="node-a"), "127.0.0.1:5080")


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_task_is_found_again_by_a_new_store_and_only_by_its_owner(tmp_path):
    first = FileTaskStore(process(), tmp_path)
    run(first.save(task("t1"), as_user("ann")))
    again = FileTaskStore(process(), tmp_path)  # a restart
    found = run(again.get("t1", as_user("ann")))
    assert found is not None and found.status.state == TaskState.TASK_STATE_COMPLETED
    assert run(again.get("t1", as_user("bob"))) is None
    assert run(again.get("t1", as_user(""))) is None
    [file] = tmp_path.rglob("*.json")
    assert file.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("hostile", ["../../outside", "/etc/passwd", "a\x00b", ".."])
def test_a_hostile_task_id_or_owner_names_no_path_outside(tmp_path, hostile):
    folder = tmp_path / "tasks"
    store = FileTaskStore(process(), folder)
    run(store.save(task(hostile), as_user(hostile)))
    assert run(store.get(hostile, as_user(hostile))).id == hostile
    assert [p.parent.parent for p in tmp_path.rglob("*.json")] == [folder]


def test_a_damaged_file_is_a_task_not_found_and_a_line_in_the_log(tmp_path, caplog):
    store = FileTaskStore(process(), tmp_path)
    run(store.save(task("t1"), as_user("ann")))
    run(store.save(task("t2"), as_user("ann")))
    [damaged, _] = sorted(tmp_path.rglob("*.json"))
    damaged.write_text('{"version": 1, "task": {"status": 7')
    with caplog.at_level(logging.ERROR):
        found = {run(store.get(t, as_user("ann"))) is None for t in ("t1", "t2")}
        listed = run(store.list(ListTasksRequest(), as_user("ann")))
    assert found == {True, False}
    assert len(listed.tasks) == 1
    assert "cannot be read" in caplog.text and str(damaged) in caplog.text


def test_a_task_left_working_by_a_process_that_is_gone_is_told_failed(tmp_path):
    gone = FileTaskStore(process(), tmp_path)
    run(gone.save(task("t1", TaskState.TASK_STATE_WORKING), as_user("ann")))
    here = FileTaskStore(process(), tmp_path)  # a new process: another start time
    run(here.save(task("t2", TaskState.TASK_STATE_WORKING), as_user("ann")))
    left = run(here.get("t1", as_user("ann")))
    assert left.status.state == TaskState.TASK_STATE_FAILED
    assert left.status.message.parts[0].text == ORPHANED
    mine = run(here.get("t2", as_user("ann")))  # this process still runs it
    assert mine.status.state == TaskState.TASK_STATE_WORKING
    # Written back: the next store reads it failed without asking again.
    assert run(FileTaskStore(process(), tmp_path).get("t1", as_user("ann"))).status.state == (
        TaskState.TASK_STATE_FAILED
    )


def test_a_task_is_told_as_saved_while_the_nodes_cannot_be_listed(tmp_path):
    class Unknown(Alone):
        def nodes(self):
            raise RuntimeError("Redis does not answer")

    run(FileTaskStore(process(), tmp_path).save(task("t1", TaskState.TASK_STATE_WORKING),
                                                as_user("ann")))  # fmt: skip
    store = FileTaskStore(Unknown(ClusterConfig(), "127.0.0.1:5080"), tmp_path)
    assert run(store.get("t1", as_user("ann"))).status.state == TaskState.TASK_STATE_WORKING


def test_the_list_is_the_owners_filtered_and_paged(tmp_path):
    store = FileTaskStore(process(), tmp_path)
    for n in range(5):
        run(store.save(task(f"t{n}", context="c1" if n < 3 else "c2"), as_user("ann")))
    run(store.save(task("other"), as_user("bob")))
    listed = run(store.list(ListTasksRequest(context_id="c1", page_size=2), as_user("ann")))
    assert listed.total_size == 3 and len(listed.tasks) == 2 and listed.next_page_token
    rest = run(store.list(ListTasksRequest(context_id="c1", page_token=listed.next_page_token),
                          as_user("ann")))  # fmt: skip
    assert {t.id for t in [*listed.tasks, *rest.tasks]} == {"t0", "t1", "t2"}
    run(store.delete("t0", as_user("ann")))
    assert run(store.get("t0", as_user("ann"))) is None


def test_past_the_kept_number_the_least_recently_changed_go(tmp_path):
    store = FileTaskStore(process(), tmp_path, kept=3)
    for n in range(3):
        run(store.save(task(f"t{n}"), as_user("ann")))
        # Distinct times: a file's time may be as coarse as the kernel's tick.
        [saved] = [p for p in tmp_path.rglob("*.json") if p.stat().st_mtime > 10_000]
        os.utime(saved, (1000 + n, 1000 + n))
    run(store.save(task("t0"), as_user("ann")))  # changed: now the newest
    run(store.save(task("t3"), as_user("ann")))
    kept = {t.id for t in run(store.list(ListTasksRequest(), as_user("ann"))).tasks}
    assert kept == {"t0", "t2", "t3"}


def test_tasks_saved_on_many_threads_at_once_are_all_kept(tmp_path):
    store = FileTaskStore(process(), tmp_path)

    def save(n: int) -> None:
        for step in (TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED):
            run(store.save(task(f"t{n}", step), as_user("ann")))

    threads = [threading.Thread(target=save, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    listed = run(store.list(ListTasksRequest(page_size=100), as_user("ann"))).tasks
    assert len(listed) == 16
    assert {t.status.state for t in listed} == {TaskState.TASK_STATE_COMPLETED}
