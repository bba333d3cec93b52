"""A2A tasks on disk (server/apis/a2a/tasks.py): each owner's apart, found again by a new
store (a restart), hostile ids kept inside the folder, damaged files a task not found (said
once), a task left working by a process that is gone told as failed (never this process's
own), an ended task never changed, lists that read only their page, old tasks forgotten by
count and by bytes, and a deleted account's tasks gone or its heir's."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import threading
import time
from pathlib import Path

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    Artifact,
    ListTasksRequest,
    Message,
    Part,
    Task,
    TaskState,
    TaskStatus,
)

from cluster.config import ClusterConfig
from cluster.node import Alone, NodeRecord
from server.apis.a2a import tasks as tasks_module
from server.apis.a2a.context import KeyOwner
from server.apis.a2a.task_files import hand_over, owner_folder
from server.apis.a2a.tasks import ORPHANED, FileTaskStore

WORKING, COMPLETED = TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED
CANCELED, FAILED = TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED


def as_user(name: str) -> ServerCallContext:
    return ServerCallContext(user=KeyOwner(name))


ANN = as_user("ann")


def task(task_id: str, state: int = COMPLETED, context: str = "c1", size: int = 0) -> Task:
    made = Task(id=task_id, context_id=context, status=TaskStatus(state=state))
    made.status.timestamp.GetCurrentTime()
    if size:
        made.artifacts.append(Artifact(artifact_id="a", parts=[Part(raw=b"x" * size)]))
    return made


class Node(Alone):
    """This process; `living` are the cluster's other nodes (None: Redis does not answer)."""

    def __init__(self, name: str = "node-a", living: list[NodeRecord] | None = None) -> None:
        super().__init__(ClusterConfig(node_id=name), "127.0.0.1:5080")
        self.living = [] if living is None else living
        self.unknown = living is None and name == "unknown"

    def nodes(self) -> list[NodeRecord]:
        if self.unknown:
            raise RuntimeError("Redis does not answer")
        return self.living


def record(node: Node) -> NodeRecord:
    return NodeRecord(node.config.node_id, node.address, node.started, 0, time.time())


def run(coroutine):
    return asyncio.run(coroutine)


def get(store: FileTaskStore, task_id: str, who: ServerCallContext = ANN) -> Task | None:
    return run(store.get(task_id, who))


def listed(store: FileTaskStore, **params) -> list[Task]:
    return list(run(store.list(ListTasksRequest(**params), ANN)).tasks)


def test_a_task_is_found_again_by_a_new_store_and_only_by_its_owner(tmp_path):
    run(FileTaskStore(Node(), tmp_path).save(task("t1"), ANN))
    again = FileTaskStore(Node(), tmp_path)  # a restart
    assert get(again, "t1").status.state == COMPLETED
    assert get(again, "t1", as_user("bob")) is None and get(again, "t1", as_user("")) is None
    files = sorted(tmp_path.rglob("*.*"))
    assert [f.suffix for f in files] == [".json", ".task"]
    assert {f.stat().st_mode & 0o777 for f in files} == {0o600}


@pytest.mark.parametrize("hostile", ["../../outside", "/etc/passwd", "a\x00b", ".."])
def test_a_hostile_task_id_or_owner_names_no_path_outside(tmp_path, hostile):
    folder = tmp_path / "tasks"
    store = FileTaskStore(Node(), folder)
    run(store.save(task(hostile), as_user(hostile)))
    assert get(store, hostile, as_user(hostile)).id == hostile
    assert {p.parent.parent for p in tmp_path.rglob("*.*")} == {folder}


def test_what_a_client_sent_comes_back_as_it_was_nan_included(tmp_path):
    """Kept as the protocol's bytes: a data part's NaN (JSON-RPC bodies may carry one)
    cannot be written as JSON, and the task was lost before."""
    store = FileTaskStore(Node(), tmp_path)
    sent = task("t1")
    sent.history.append(Message(message_id="m", parts=[Part(raw=b"\x00\xff", filename="b.bin")]))
    sent.history[0].parts.add().data.number_value = math.nan
    run(store.save(sent, ANN))
    back = get(store, "t1")
    assert back.history[0].parts[0].raw == b"\x00\xff"
    assert math.isnan(back.history[0].parts[1].data.number_value)


@pytest.mark.parametrize(
    ("damage", "which"),
    [
        ('{"version": 1, "id": "t1", "state": 7', ".json"),
        ("[" * 100_000 + "]" * 100_000, ".json"),  # too deep to decode
        (
            '{"version": 1, "id": "t1", "context": "c", "state": 1e400, "at": 0, "size": 0,'
            ' "node": "n", "started": 0}',
            ".json",
        ),  # fmt: skip
        (
            '{"version": 1, "id": "other", "context": "c", "state": 3, "at": 0, "size": 0,'
            ' "node": "n", "started": 0}',
            ".json",
        ),  # fmt: skip
        ("not a task at all", ".task"),
    ],
)
def test_a_damaged_file_is_a_task_not_found_said_once_in_the_log(tmp_path, caplog, damage, which):
    store = FileTaskStore(Node(), tmp_path)
    run(store.save(task("t1"), ANN))
    run(store.save(task("t2"), ANN))
    [damaged] = [p for p in tmp_path.rglob(f"*{which}") if get_id(p) == "t1"]
    damaged.write_text(damage)
    with caplog.at_level(logging.ERROR):
        assert get(store, "t1") is None and get(store, "t2").id == "t2"
        for _ in range(3):
            assert [t.id for t in listed(store)] == ["t2"]
    said = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]


def get_id(path: Path) -> str:
    """Which task a file is of, by its name's twin (the small file names it)."""
    return json.loads(path.with_suffix(".json").read_text())["id"]


def test_a_task_left_working_by_a_process_that_is_gone_is_told_failed_not_written(tmp_path):
    run(FileTaskStore(Node(), tmp_path).save(task("t1", WORKING), ANN))
    here = FileTaskStore(Node(), tmp_path)  # started again: another start time
    run(here.save(task("t2", WORKING), ANN))
    left = get(here, "t1")
    assert left.status.state == FAILED and left.status.message.parts[0].text == ORPHANED
    assert get(here, "t2").status.state == WORKING  # this process still runs it
    assert {t.id: t.status.state for t in listed(here)} == {"t1": FAILED, "t2": WORKING}
    assert [t.id for t in listed(here, status=FAILED)] == ["t1"]
    assert "t1" in {a.id for a in here._abouts(owner_folder("ann", tmp_path)).values()
                    if a.state == WORKING}  # fmt: skip


def test_this_process_never_tells_its_own_running_task_failed(tmp_path):
    """Redis forgetting this node (a restart of Redis, a late heartbeat) is no reason."""
    node = Node("node-a", living=[])
    store = FileTaskStore(node, tmp_path)
    run(store.save(task("t1", WORKING), ANN))
    assert get(store, "t1").status.state == WORKING


def test_another_nodes_task_is_failed_only_while_that_node_is_not_alive(tmp_path):
    other = Node("node-b")
    run(FileTaskStore(other, tmp_path).save(task("t1", WORKING), ANN))
    alive = FileTaskStore(Node("node-a", living=[record(other)]), tmp_path)
    assert get(alive, "t1").status.state == WORKING
    gone = FileTaskStore(Node("node-a", living=[]), tmp_path)
    assert get(gone, "t1").status.state == FAILED
    unknown = FileTaskStore(Node("unknown", living=None), tmp_path)
    assert get(unknown, "t1").status.state == WORKING  # told as it was saved


def test_an_ended_task_is_never_changed_again_and_a_cancel_from_elsewhere_stops_the_run(
    tmp_path,
):
    """Another node cancelled it (`tasks/cancel` reached a node not running it): the
    running node's next save is refused as the SDK's versioned stores refuse it (the SDK
    then ends the task's stream), and its run is told to stop."""
    told: list[tuple[str, str]] = []
    store = FileTaskStore(Node(), tmp_path, cancelled_elsewhere=lambda t, o: told.append((t.id, o)))
    run(store.save(task("t1", WORKING), ANN))
    run(store.save(task("t1", CANCELED), ANN))
    for later in (WORKING, COMPLETED):
        with pytest.raises(ConcurrentTaskModificationError):
            run(store.save(task("t1", later), ANN))
    assert get(store, "t1").status.state == CANCELED
    assert told == [("t1", "ann"), ("t1", "ann")]
    run(store.save(task("t2", COMPLETED), ANN))
    with pytest.raises(ConcurrentTaskModificationError):
        run(store.save(task("t2", FAILED), ANN))
    assert len(told) == 2  # completed, not cancelled: no run to stop


def test_a_task_this_process_no_longer_runs_is_told_failed(tmp_path):
    """Its saves failed (Redis down, a full disk), or a backup put it back: it said
    "working" for the life of the process."""
    runs = {"t1", "t2"}
    store = FileTaskStore(Node(), tmp_path, running=lambda: set(runs))
    for task_id in ("t1", "t2"):
        run(store.save(task(task_id, WORKING), ANN))
    runs.discard("t1")
    assert get(store, "t1").status.state == WORKING  # just saved: its last saves may come
    for path in owner_folder("ann", tmp_path).glob("*.json"):
        os.utime(path, (1000, 1000))
    assert get(store, "t1").status.state == FAILED
    assert get(store, "t2").status.state == WORKING


def test_a_crash_between_a_tasks_two_files_never_hides_its_answer(tmp_path):
    first = FileTaskStore(Node(), tmp_path)
    run(first.save(task("t1", WORKING), ANN))
    done = task("t1", COMPLETED)
    done.artifacts.append(Artifact(artifact_id="a", parts=[Part(text="THE ANSWER")]))
    [task_file] = owner_folder("ann", tmp_path).glob("*.task")
    task_file.write_bytes(done.SerializeToString())  # written; the small file not yet
    again = FileTaskStore(Node(), tmp_path)  # the restart after the crash
    told = get(again, "t1")
    assert told.status.state == COMPLETED and told.artifacts[0].parts[0].text == "THE ANSWER"
    assert [t.id for t in listed(again, status=COMPLETED)] == ["t1"]  # its small file put right


def test_the_list_is_the_owners_filtered_and_paged_and_reads_only_its_page(tmp_path, monkeypatch):
    store = FileTaskStore(Node(), tmp_path)
    for n in range(30):
        run(store.save(task(f"t{n}", context="c1" if n < 3 else "c2"), ANN))
    run(store.save(task("other"), as_user("bob")))
    read: list[int] = []
    whole = FileTaskStore._page

    def counted(self, abouts, gone):
        read.append(len(abouts))
        return whole(self, abouts, gone)

    monkeypatch.setattr(FileTaskStore, "_page", counted)
    page = run(store.list(ListTasksRequest(context_id="c1", page_size=2), ANN))
    assert page.total_size == 3 and len(page.tasks) == 2 and page.next_page_token
    assert read == [2]  # the page's tasks alone were read whole
    rest = run(store.list(ListTasksRequest(context_id="c1", page_token=page.next_page_token), ANN))
    assert {t.id for t in [*page.tasks, *rest.tasks]} == {"t0", "t1", "t2"}
    run(store.delete("t0", ANN))
    assert get(store, "t0") is None and len(listed(store, page_size=100)) == 29


def test_past_the_kept_number_or_bytes_the_least_recently_changed_ended_ones_go(tmp_path):
    store = FileTaskStore(Node(), tmp_path, kept=3, kept_bytes=10_000)
    owner = owner_folder("ann", tmp_path)
    run(store.save(task("w", WORKING), ANN))  # works: never forgotten
    for n in range(2):
        run(store.save(task(f"t{n}"), ANN))
    for n, path in enumerate(sorted(owner.glob("*.json"), key=lambda p: get_id(p))):
        os.utime(path, (1000 + n, 1000 + n))  # distinct times: a tick may be coarse
    run(store.save(task("t2"), ANN))
    assert {t.id for t in listed(store)} == {"w", "t1", "t2"}
    run(store.save(task("big", size=9_950), ANN))  # over the bytes: the oldest ended go
    assert {t.id for t in listed(store)} == {"w", "big"}
    run(store.save(task("huge", size=20_000), ANN))  # over alone: kept, the others go
    assert {t.id for t in listed(store)} == {"w", "huge"}
    stale = owner / ".x.json.abc.tmp"
    stale.write_text("left by a crash")
    os.utime(stale, (1000, 1000))
    run(store.save(task("t9"), ANN))
    assert not stale.exists()


def test_a_deleted_accounts_tasks_go_with_it_or_to_its_heir_and_stay_gone(tmp_path):
    store = FileTaskStore(Node(), tmp_path)
    run(store.save(task("bobs", WORKING), as_user("bob")))
    run(store.save(task("cats"), as_user("cat")))
    hand_over("bob", "ann", tmp_path)
    assert get(store, "bobs", as_user("bob")) is None and get(store, "bobs").id == "bobs"
    hand_over("cat", None, tmp_path)
    assert get(store, "cats", as_user("cat")) is None
    assert [p.name for p in owner_folder("cat", tmp_path).iterdir()] == [".gone"]
    # A late save as the account goes (its run stopping) brings nothing back for an
    # account made later under the same name; that account's own tasks are kept.
    run(store.save(task("bobs", CANCELED), as_user("bob")))
    assert get(store, "bobs", as_user("bob")) is None
    run(store.save(task("new"), as_user("bob")))
    assert get(store, "new", as_user("bob")).id == "new"


def test_tasks_left_by_a_stopped_process_are_forgotten_like_ended_ones(tmp_path):
    for n in range(3):
        run(FileTaskStore(Node(), tmp_path).save(task(f"orphan{n}", WORKING), ANN))
    store = FileTaskStore(Node(), tmp_path, kept=3)
    run(store.save(task("t1"), ANN))
    run(store.save(task("t2"), ANN))
    kept = {t.id for t in listed(store)}
    assert {"t1", "t2"} <= kept and len(kept) == 3


def test_a_page_ends_early_past_its_bytes_and_its_token_leads_on(tmp_path, monkeypatch):
    monkeypatch.setattr(tasks_module, "PAGE_BYTES", 25_000)
    store = FileTaskStore(Node(), tmp_path)
    for n in range(5):
        run(store.save(task(f"t{n}", size=10_000), ANN))
    seen: list[str] = []
    token = ""
    while True:
        page = run(store.list(ListTasksRequest(page_size=100, page_token=token), ANN))
        assert 1 <= len(page.tasks) <= 2
        seen += [t.id for t in page.tasks]
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == [f"t{n}" for n in range(5)]


def test_tasks_saved_on_many_threads_at_once_are_all_kept(tmp_path):
    store = FileTaskStore(Node(), tmp_path)

    def save(n: int) -> None:
        for step in (WORKING, COMPLETED):
            run(store.save(task(f"t{n}", step), ANN))

    threads = [threading.Thread(target=save, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tasks = listed(store, page_size=100)
    assert len(tasks) == 16 and {t.status.state for t in tasks} == {COMPLETED}
