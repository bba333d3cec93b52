"""Whose a scheduled task is, who may see it, and whether its owner may still run it.

Every task has an owner (`Task.owner`): the user who made it. They alone list, read,
change, delete and run it (admins included, as with chats: another's task id is
"no task", a 404), and its runs are theirs: its chat is made as theirs and continued only
while it is theirs. A task from before accounts (no owner) is the first admin's, as a
chat from then is (`ChatManager.legacy_owner`). In the desktop mode (no account) there
is no owner and the one person sees every task.

All tasks are kept in one file (usr/scheduler/tasks.json) with their owner, not one file
in each person's space: the one scheduler loop sees every task at once to run it on
time, task ids stay unique across the server, the backup's "scheduler" part and the
restore's hold on the task list cover everyone's tasks unchanged, and a leaving user's
tasks are handed over or deleted by a change of one field (`Scheduler.hand_over`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from accounts.users import Users

if TYPE_CHECKING:
    from scheduler.store import TaskStore
    from scheduler.tasks import Task
    from store.chats import ChatManager

log = logging.getLogger(__name__)


class TaskOwners:
    """The owners of one server's tasks, as its accounts and chats have them now."""

    def __init__(self, chats: ChatManager, users: Users | None = None) -> None:
        self.chats = chats
        #: usr/users.json wherever usr/ is (read again only when it changed).
        self.users = users or Users()

    def whose(self, owner: str | None) -> str | None:
        """`owner`, or for none the first admin's name (None: the desktop mode)."""
        return owner or self.chats.legacy_owner

    def recorded(self, owner: str | None) -> str | None:
        """How `owner` is kept on a task: the first admin as no one (the install's own, as
        the chats of before accounts), so that renaming their login in Settings leaves
        every task of theirs theirs."""
        return None if owner is not None and owner == self.chats.legacy_owner else owner

    def of(self, task: Task) -> str | None:
        return self.whose(task.owner)

    def sees(self, viewer: str | None, task: Task) -> bool:
        """May `viewer` (a user's name; None: Cadre itself, or the desktop mode's one person)
        see and touch `task`?"""
        return viewer is None or self.of(task) == viewer

    def refusal(self, owner: str | None) -> str | None:
        """Why a task of `owner` may not run now (their account is gone or disabled: a task
        restored from an older backup, say), in words; None when it may."""
        if owner is None or not self.users.any():
            return None
        user = self.users.get(owner)
        if user is None:
            return (f"its owner {owner!r} has no account any more: an admin may delete the"
                    " task, or make the account again")  # fmt: skip
        if user.disabled:
            return f"its owner {owner!r} is disabled: it runs again once they are enabled"
        return None

    def hand_over(self, store: TaskStore, owner: str, heir: str | None,
                  projects: Mapping[str, str]) -> int:  # fmt: skip
        """A user leaves: their tasks in `store` become `heir`'s, or are deleted (None); how
        many. `projects`: their projects' names in the heir's space (store/handing_over.py)
        by their names before, so that a task runs in its project where it is now."""
        theirs = [task for task in store.all() if self.of(task) == owner]
        for task in theirs:
            if heir is None:
                store.remove(task.id)
                continue
            kept = {"owner": self.recorded(heir),
                    "project": projects.get(task.project, task.project)}  # fmt: skip
            store.update(task.id, lambda t, kept=kept: t.model_copy(update=kept))
        log.info("accounts: %d task(s) of %r %s", len(theirs), owner,
                 f"handed over to {heir!r}" if heir else "deleted")  # fmt: skip
        return len(theirs)
