"""usr/scheduler/tasks.json: saved whole after every change, read back equal, a damaged
file set aside and never overwritten."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from helpers.errors import NotFound
from scheduler.store import TaskStore, tasks_file
from scheduler.tasks import Task


def test_tasks_are_saved_and_read_back_equal(usr_dir):
    store = TaskStore()
    task = store.put(Task(name="n", prompt="p", kind="scheduled", cron="0 9 * * *",
                          next_run=datetime(2026, 1, 1, 9, tzinfo=UTC)))  # fmt: skip
    store.update(task.id, lambda t: t.model_copy(update={"last_result": "done"}))
    assert tasks_file() == usr_dir / "scheduler" / "tasks.json"
    document = json.loads(tasks_file().read_text())
    assert document["version"] == 1 and document["tasks"][0]["last_result"] == "done"
    assert TaskStore().all() == store.all()
    store.remove(task.id)
    assert TaskStore().all() == []
    with pytest.raises(NotFound, match="no task"):
        store.get(task.id)


@pytest.mark.parametrize(
    "damaged",
    ['{"version": 1, "tasks": [{"name": ', '{"version": 1, "tasks": ' + "[" * 100_000],
    ids=["cut short", "nested past what the parser follows"],
)
def test_a_damaged_file_is_set_aside_not_overwritten(usr_dir, damaged):
    tasks_file().parent.mkdir(parents=True)
    tasks_file().write_text(damaged)
    store = TaskStore()
    assert store.all() == []
    [aside] = tasks_file().parent.glob("tasks.json.damaged-*")
    assert aside.read_text() == damaged
    store.put(Task(name="n", prompt="p", kind="adhoc"))
    assert aside.exists() and len(TaskStore().all()) == 1
