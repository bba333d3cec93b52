"""The scheduler service: runs due tasks while Cadre runs, and the runs asked for now.

A run is a message to Agent 0 like any other (`Chat.communicate`): in the
task's dedicated chat, or in a new chat each time, made as the task owner's
(scheduler/owners.py: each person sees, changes and runs only their own tasks).
It waits for Agent 0's answer on a thread of its own, then keeps the answer (or
the error) as the task's last result and tells the owner (scheduler/reports.py).
A run the owner's limits refuse (core/run_gate.py) leaves no chat: the limits are
asked before a new chat is made, and a chat made for a run refused at its start
all the same (another run of theirs began meanwhile) is deleted again; the refusal
reaches the owner as the task's last result and a notification. A task never runs
twice at once: a run that is due while the last one still goes on is skipped.

A run is marked in the task list while it goes on (`running_since`): one that a
stop, a kill or a crash of Cadre cut short is still marked at the next start, and
is recorded as interrupted there, in words; it is run again once then, as a run
missed while Cadre was stopped is (`run_missed`; never an ad hoc task's, nor a
run whose run before was cut short too: a task that keeps being cut short may be
what brings Cadre down, and it waits for its next due time instead).

In cluster mode several processes (nodes) share usr/: a due run fires only on the node
that claims it, and a run marked going on is recorded as cut short only when no other
live node may have it going (scheduler/due.py).

Time comes from `clock`, and `tick(now)` / `catch_up(now)` do one round of work,
so tests drive the timing without waiting for it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from accounts.spaces import space_of
from accounts.users import Users
from core import run_gate
from core.agent_types import UserMessage
from helpers.errors import CadreError, NotFound, OverLimit, Unavailable, UserError
from scheduler.coordination import Coordination, Solo
from scheduler.due import DueRuns
from scheduler.owners import TaskOwners
from scheduler.reports import Notify, RunReports
from scheduler.run_words import failure_words, interrupted_words
from scheduler.store import TaskStore
from scheduler.tasks import Task, TaskPatch, TaskSpec, next_run, validated

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Seconds between two looks at what is due.
TICK = 1.0


def utc_now() -> datetime:
    return datetime.now(UTC)


class TaskRunning(UserError):
    """A run was asked for while the task's last run still goes on."""


class NotStarted(UserError):
    """A run that did not start (its owner's limits, or account), in words; no chat is left
    for it."""


class Scheduler:
    """The tasks of one Cadre process and their runs."""

    def __init__(
        self,
        store: TaskStore,
        chats: ChatManager,
        clock: Callable[[], datetime] = utc_now,
        tick: float = TICK,
        users: Users | None = None,
        notify: Notify | None = None,
        coordination: Coordination | None = None,
    ) -> None:
        self.store = store
        self.chats = chats
        self.owners = TaskOwners(chats, users)
        #: How each run ends up told: `notify` adds to a person's notification history.
        self.reports = RunReports(store, chats, notify)
        self.clock = clock
        self.interval = tick
        #: The due runs this process fires (cluster mode: those this node claims).
        self.due = DueRuns(store, coordination or Solo())
        #: Task id → the thread of its run going on (a task has at most one).
        self._runs: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- the service -------------------------------------------------------------

    def start(self) -> Scheduler:
        """Deal with the runs cut short or missed while Cadre was stopped, then look for
        due tasks every `interval` seconds until `stop`."""
        now = self.clock()
        self.interrupted()
        self.catch_up(now)
        self._ticker = threading.Thread(target=self._tick_loop, name="cadre-scheduler",
                                        daemon=True)  # fmt: skip
        self._ticker.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(10)

    def _tick_loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick(self.clock())
            except Exception:
                log.exception("the scheduler's round failed; it goes on at the next one")

    def holding(self) -> AbstractContextManager[None]:
        """While a restore swaps the files (server/routes/backups.py): no task is changed,
        planned or recorded (those wait), and the task list is read again after it, so
        nothing held here is written over the restored one."""
        return self.store.held()

    def restored(self, parts: list[str]) -> None:
        """A backup's parts were restored (the task list was read again in `holding`): its
        runs missed meanwhile are dealt with as at a start."""
        if "scheduler" in parts:
            self.interrupted()  # a backup made while a task ran: that run is not going on
            self.catch_up(self.clock())

    def interrupted(self) -> list[str]:
        """Record each run still marked as going on that does not (Cadre stopped or was
        killed during it) as interrupted, and start it again once when the rules above
        say so. Returns the ids of the tasks started again."""
        started = []
        try:
            marked = [t for t in self.store.all() if t.running_since and not self.running(t.id)]
            cut = [task for task in marked if self.due.cut_short(task)]
        except Unavailable as exc:  # a node started while Redis is away: it serves on
            log.error("the runs cut short while Cadre was stopped are not dealt with now: %s;"
                      " they are at the next start", exc)  # fmt: skip
            return []
        for task in cut:
            again = (task.enabled and task.kind != "adhoc" and task.run_missed
                     and task.last_status != "interrupted")  # fmt: skip
            words = interrupted_words(task, again)
            log.warning("task %s (%s): %s", task.id, task.name, words)
            kept = {"running_since": None, "last_status": "interrupted", "last_result": words}
            try:
                self.store.update(task.id, lambda t, kept=kept: t.model_copy(update=kept))
            except (NotFound, Unavailable):  # gone; or Redis away: dealt with at a next start
                continue
            if again and self._launch(task):
                started.append(task.id)
        return started

    def catch_up(self, now: datetime) -> list[str]:
        """At start: each task that was due while Cadre was stopped runs once now, or is
        skipped, as its `run_missed` says. Returns the ids of the tasks started."""
        started = []
        for task in self.due.tasks(now):
            if task.run_missed:
                started += self._start_due(task, now)
            elif self.due.take(task, now):  # one node says it, and plans it forward
                log.info("task %s (%s): the run due at %s was missed while Cadre was stopped;"
                         " skipped", task.id, task.name, task.next_run)  # fmt: skip
        return started

    def tick(self, now: datetime) -> list[str]:
        """Start the tasks due at `now`; returns their ids."""
        started = []
        for task in self.due.tasks(now):
            started += self._start_due(task, now)
        return started

    def _start_due(self, task: Task, now: datetime) -> list[str]:
        if not self.due.take(task, now):
            return []
        if self.running(task.id):
            log.warning("task %s (%s) is due but its last run still goes on: skipped",
                        task.id, task.name)  # fmt: skip
            return []
        self._launch(task)
        return [task.id]

    # -- what the panel, the API and the tool do ----------------------------------
    # `viewer`: the user asking (None: Cadre itself, or the desktop mode's one person);
    # another's task is NotFound, as one that does not exist.

    def tasks(self, viewer: str | None = None) -> list[Task]:
        """The tasks `viewer` may see, oldest first."""
        return [task for task in self.store.all() if self.owners.sees(viewer, task)]

    def task(self, task_id: str, viewer: str | None = None) -> Task:
        task = self.store.get(task_id)
        if not self.owners.sees(viewer, task):
            raise NotFound(f"no task {task_id!r}")
        return task

    def create(self, spec: TaskSpec, owner: str | None = None) -> Task:
        """A new task of `owner` (None: the desktop mode)."""
        tidy = validated(spec, space_of(owner))
        task = Task.model_validate({**tidy.model_dump(), "owner": self.owners.recorded(owner)})
        task.next_run = next_run(task, self.clock())
        _check_planned_left(task)
        return self.store.put(task)

    def update(self, task_id: str, patch: TaskPatch, viewer: str | None = None) -> Task:
        """Change the fields `patch` gives; the whole task is checked again, and when it
        runs next is worked out anew."""
        given = patch.model_dump(exclude_unset=True, exclude_none=True)

        # Made inside the store's lock: a run that records its result meanwhile is not lost.
        def change(old: Task) -> Task:
            if not self.owners.sees(viewer, old):
                raise NotFound(f"no task {task_id!r}")
            kind = given.get("kind", old.kind)
            # A new kind drops the timing the old one had, unless the patch gives it again.
            if kind != "scheduled":
                given.setdefault("cron", "")
            if kind != "planned":
                given.setdefault("at", [])
            # Validated, not model_copy'd: a field past its limit (a 201-character name) saved
            # once would make tasks.json unreadable at the next start, setting every task aside.
            try:
                merged = TaskSpec.model_validate({**old.spec().model_dump(), **given})
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "task"
                raise UserError(f"{where}: {first['msg']}") from None
            tidy = validated(merged, space_of(old.owner))
            task = old.model_copy(update=tidy.model_dump())
            task.next_run = next_run(task, self.clock())
            # Switched on counts too: a planned task with no time left would be on, yet never run.
            if {"at", "kind", "enabled"} & patch.model_fields_set:
                _check_planned_left(task)
            if (old.profile, old.project) != (task.profile, task.project):
                task.chat_id = ""  # the old chat has the old profile: the next run starts one
            return task

        return self.store.update(task_id, change)

    def delete(self, task_id: str, viewer: str | None = None) -> Task:
        """Forget the task (a run going on ends in its chat; its chats stay)."""
        self.task(task_id, viewer)
        return self.store.remove(task_id)

    def run_now(self, task_id: str, viewer: str | None = None) -> Task:
        """Start a run of the task now, whatever its kind and whether enabled;
        TaskRunning when its last run still goes on."""
        task = self.task(task_id, viewer)
        if not self._launch(task):
            raise TaskRunning(f"task {task.name!r} is running already: wait for its answer")
        return task

    def running(self, task_id: str) -> bool:
        with self._lock:
            return task_id in self._runs

    def view(self, task: Task) -> dict[str, Any]:
        """The task as the API and the panel show it (one from before accounts: whose it is)."""
        return {**task.model_dump(mode="json"), "owner": self.owners.of(task),
                "running": self.running(task.id)}  # fmt: skip

    def hand_over(self, owner: str, heir: str | None,
                  projects: Mapping[str, str] | None = None) -> int:  # fmt: skip
        """A user leaves: their tasks become `heir`'s, or are deleted (None); how many
        (scheduler/owners.py `hand_over`)."""
        return self.owners.hand_over(self.store, owner, heir, projects or {})

    def wait(self, task_id: str, timeout: float) -> None:
        """Block until the task's run going on (if any) has ended (tests, shutdown)."""
        with self._lock:
            thread = self._runs.get(task_id)
        if thread is not None:
            thread.join(timeout)

    # -- a run --------------------------------------------------------------------

    def _launch(self, task: Task) -> bool:
        """Start `task`'s run on a thread of its own; False when one goes on already."""
        with self._lock:
            if task.id in self._runs:
                return False
            thread = threading.Thread(target=self._run, args=(task.id,), daemon=True,
                                      name=f"cadre-task-{task.id}")  # fmt: skip
            self._runs[task.id] = thread
        thread.start()
        return True

    def _run(self, task_id: str) -> None:
        try:
            task = self.store.get(task_id)
            began = self.clock()
            # On disk before anything else: a run a kill cuts short is known at the next start.
            self.store.update(task_id, lambda t: t.model_copy(
                update={"last_run": began, "running_since": began}))  # fmt: skip
            context, made = None, False
            try:
                context, made = self._chat_for(task)
                self.store.update(task_id, lambda t: t.model_copy(
                    update={"chat_id": context.id}))  # fmt: skip
                answer, ok = self._ask(task, context, made), True
            except NotStarted as exc:
                answer, ok = f"the task did not run: {exc}", False
                # Told in the task's own chat; without one (none was kept for this run),
                # straight to the owner (scheduler/reports.py).
                context = None if made else context
            except concurrent.futures.CancelledError as exc:
                if self._stop.is_set():
                    return  # Cadre is stopping: the chat comes back interrupted, not failed
                answer, ok = failure_words(exc), False
            except CadreError as exc:
                answer, ok = failure_words(exc), False
            except Exception as exc:
                log.exception("task %s (%s) failed", task_id, task.name)
                answer, ok = f"the run failed: {exc}", False
            self.reports.record(task, self.owners.of(task), began, answer, ok, context)
        except NotFound:
            pass  # deleted meanwhile: nothing to record
        except Exception:
            log.exception("task %s: its run could not be recorded", task_id)
        finally:
            with self._lock:
                self._runs.pop(task_id, None)

    def _chat_for(self, task: Task) -> tuple[Chat, bool]:
        """The task's dedicated chat (made on first use or when it was deleted, or when it is
        no longer its owner's), or a new one, the owner's; and whether it was made now.
        NotStarted, and no chat made, when the owner's limits refuse a run now."""
        owner = self.owners.of(task)
        refused = self.owners.refusal(owner)
        if refused is not None:
            raise NotStarted(refused)
        if task.dedicated_chat and task.chat_id:
            try:
                return self.chats.get(task.chat_id, owner), False
            except NotFound:
                pass
        try:
            run_gate.check_new_run(self.chats.runtime, owner)
        except OverLimit as exc:
            raise NotStarted(str(exc)) from None
        overrides = {"agent_profile": task.profile} if task.profile else {}
        context = self.chats.new_chat(task.project or None, owner, **overrides)
        self.chats.rename(context.id, f"Task: {task.name}")
        return context, True

    def _ask(self, task: Task, context: Chat, made: bool) -> str:
        msg = UserMessage(task.prompt)
        context.task_run = task.id  # cleared once its report is logged (scheduler/reports.py)
        try:
            run = context.communicate(msg)
        except OverLimit as exc:
            # Refused at its start (in the task's own chat, or a run of the owner's began
            # since the check above): a chat made for it goes again, empty, and the task
            # names the chat it named before.
            if made:
                self.chats.delete(context.id)
                self.store.update(task.id, lambda t: t.model_copy(
                    update={"chat_id": task.chat_id}))  # fmt: skip
            raise NotStarted(str(exc)) from None
        # A chat made by the manager runs on the agents' thread: its handle is thread-side.
        assert isinstance(run, concurrent.futures.Future)
        # No time limit: a run ends with an answer, an error, a stop or Cadre's.
        return context.runner.answer_for(msg, run, None)  # type: ignore[arg-type]


def _check_planned_left(task: Task) -> None:
    if task.kind == "planned" and task.enabled and task.next_run is None:
        raise UserError("at: every planned time has passed; give one in the future")
