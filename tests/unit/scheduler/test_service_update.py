"""A task changed while its run records its result: both changes are kept."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from scheduler.service import Scheduler
from scheduler.store import TaskStore
from scheduler.tasks import TaskPatch, TaskSpec


def test_a_result_recorded_during_a_change_is_not_lost(usr_dir):
    store = TaskStore()
    recorder: list[threading.Thread] = []
    changing = threading.Event()

    def clock() -> datetime:
        # The change asks the time while it works: a run ends right then and records
        # its result from its own thread (scheduler/service.py's `_record`).
        if changing.is_set() and not recorder:
            record = threading.Thread(
                target=store.update,
                args=(task.id, lambda t: t.model_copy(update={"last_result": "the run's answer"})),
            )
            recorder.append(record)
            record.start()
            record.join(0.5)  # done at once unless the change holds the store meanwhile
        return datetime(2026, 1, 1, tzinfo=UTC)

    scheduler = Scheduler(store, chats=None, clock=clock)  # type: ignore[arg-type]
    task = scheduler.create(TaskSpec(name="Daily", prompt="Report.", kind="adhoc"))
    changing.set()
    scheduler.update(task.id, TaskPatch(name="Daily report"))
    recorder[0].join(5)
    kept = TaskStore().get(task.id)
    assert (kept.name, kept.last_result) == ("Daily report", "the run's answer")


def test_a_new_profile_or_project_takes_the_task_to_a_new_chat(usr_dir):
    """A dedicated chat has the profile and project it was made with: a task changed to
    another runs next in a new chat; any other change keeps the chat."""
    (usr_dir / "projects" / "alpha").mkdir(parents=True)
    scheduler = Scheduler(TaskStore(), chats=None)  # type: ignore[arg-type]
    task = scheduler.create(TaskSpec(name="Daily", prompt="Report.", kind="adhoc"))

    def ran_in(chat_id: str) -> None:
        scheduler.store.update(task.id, lambda t: t.model_copy(update={"chat_id": chat_id}))

    ran_in("chat-1")
    assert scheduler.update(task.id, TaskPatch(name="Daily report")).chat_id == "chat-1"
    assert scheduler.update(task.id, TaskPatch(project="alpha")).chat_id == ""
    ran_in("chat-2")
    assert scheduler.update(task.id, TaskPatch(profile="researcher")).chat_id == ""
