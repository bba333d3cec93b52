"""tasks.json shared by several processes (cluster mode): each change a read-modify-write
under the shared lock `tasks`, the file read again when another process changed it.

Two stores on one file stand for two nodes: what they share is the file, and a lock that
is `Alone`'s here (process-wide, as Redis's is cluster-wide: tests/unit/cluster/test_claims.py
shows the two lock alike). A store alone (desktop mode) reads its file at start only.
"""

from __future__ import annotations

import json
import threading

import pytest

from cluster.config import ClusterConfig
from cluster.node import Alone
from helpers.errors import NotFound
from scheduler.store import TaskStore, tasks_file
from scheduler.tasks import Task


@pytest.fixture
def lock() -> Alone:
    return Alone(ClusterConfig(), "127.0.0.1:5080")


def task(name: str) -> Task:
    return Task(name=name, prompt="p", kind="adhoc")


def on_disk() -> list[str]:
    return [row["name"] for row in json.loads(tasks_file().read_text())["tasks"]]


def test_a_change_made_by_another_process_is_read_and_kept(usr_dir, lock):
    a, b = TaskStore(shared=lock), TaskStore(shared=lock)
    first = a.put(task("first"))
    assert b.get(first.id) == first  # read again: the file changed since b read it
    second = b.put(task("second"))  # b's write keeps a's task
    assert on_disk() == ["first", "second"]
    assert [t.name for t in a.all()] == ["first", "second"]
    a.update(second.id, lambda t: t.model_copy(update={"last_result": "done by a"}))
    b.remove(first.id)  # read again first: a's change to `second` stays
    assert [(t.name, t.last_result) for t in a.all()] == [("second", "done by a")]
    with pytest.raises(NotFound):
        a.get(first.id)


def test_changes_made_at_once_by_two_processes_are_all_kept(usr_dir, lock):
    stores = [TaskStore(shared=lock), TaskStore(shared=lock)]
    go = threading.Barrier(4)

    def add(store: TaskStore, who: int) -> None:
        go.wait(10)
        for number in range(10):
            store.put(task(f"{who}-{number}"))

    workers = [threading.Thread(target=add, args=(stores[w % 2], w)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sorted(on_disk()) == sorted(f"{w}-{n}" for w in range(4) for n in range(10))
    assert {t.name for t in stores[0].all()} == {t.name for t in stores[1].all()} == set(on_disk())


def test_a_change_waits_for_the_shared_lock(usr_dir, lock):
    store = TaskStore(shared=lock)
    added: list[Task] = []
    with lock.shared_lock("tasks"):  # another node's change going on
        writer = threading.Thread(target=lambda: added.append(store.put(task("later"))))
        writer.start()
        writer.join(0.2)
        assert writer.is_alive() and not tasks_file().exists()
    writer.join(10)
    assert on_disk() == ["later"] and added[0].name == "later"


def test_a_store_alone_reads_its_file_at_start_only(usr_dir):
    """The desktop mode's cost as it was: no look at the file between its own changes."""
    mine, other = TaskStore(), TaskStore()
    other.put(task("written by hand, meanwhile"))
    assert mine.all() == []
    mine.reload()  # what a restore does
    assert [t.name for t in mine.all()] == ["written by hand, meanwhile"]


def test_a_damaged_shared_file_is_set_aside_once(usr_dir, lock):
    tasks_file().parent.mkdir(parents=True)
    tasks_file().write_text('{"version": 1, "tasks": [{"name": ')
    a = TaskStore(shared=lock)
    [aside] = tasks_file().parent.glob("tasks.json.damaged-*")
    b = TaskStore(shared=lock)  # finds no file: nothing more set aside
    b.put(task("after"))
    assert [t.name for t in a.all()] == ["after"]
    assert list(tasks_file().parent.glob("tasks.json.damaged-*")) == [aside]
