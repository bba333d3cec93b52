"""How a task's run is told: its last result kept on the task, and its owner's news of it.

The news is a `notify` item in the run's chat, which the owner's notification history
takes from there (store/notification_feed.py). A run that had no chat to tell it in (it
did not start: the owner's limits refused it, their account is disabled, its project
is gone) is told straight to the owner's history through `notify` (the server gives the
notification histories' `add`), so that a refusal is never silent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from helpers.errors import NotFound
from scheduler.store import TaskStore
from scheduler.tasks import Task

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: The longest answer or error kept as a task's last result (the chat has it all).
RESULT_LIMIT = 20_000

#: Adds an entry to a person's notification history: (owner, title, text, level, task id).
Notify = Callable[[str | None, str, str, str, str], object]


class RunReports:
    """Keeps each run's result on its task and tells its owner."""

    def __init__(self, store: TaskStore, chats: ChatManager, notify: Notify | None) -> None:
        self.store = store
        self.chats = chats
        self.notify = notify

    def record(self, task: Task, owner: str | None, began: datetime, answer: str, ok: bool,
               context: Chat | None) -> None:  # fmt: skip
        """Keep how the run of `task` (of `owner`) that began at `began` ended, and tell
        them: in `context`, the run's chat, or without one (None: the run did not start)."""
        result = answer if len(answer) <= RESULT_LIMIT else answer[:RESULT_LIMIT] + " …"
        status = "success" if ok else "error"
        try:
            kept = {"last_run": began, "last_status": status, "last_result": result,
                    "running_since": None}  # fmt: skip
            self.store.update(task.id, lambda t: t.model_copy(update=kept))
        except NotFound:
            pass  # deleted meanwhile: nothing to keep, but its owner still hears how it went
        finally:
            # Whatever became of the task, the chat's `task_run` mark must go: left set, the
            # notification history would never report that chat's own runs again.
            if context is not None:
                self._in_chat(context, task, answer, ok)
            elif self.notify is not None:
                self.notify(owner, f"Task '{task.name}' did not run", answer, "error", task.id)

    def _in_chat(self, context: Chat, task: Task, answer: str, ok: bool) -> None:
        heading = f"Task '{task.name}' " + ("finished" if ok else "failed")
        kvps = {"type": "success" if ok else "error", "task": task.id}

        def report() -> None:
            context.log.log("notify", heading, answer, kvps=kvps)
            context.task_run = None

        self.chats.runtime.call(report)
        self.chats.save_now(context)
