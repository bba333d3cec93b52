"""Which due runs this process fires: each one claimed in the cluster, then planned forward.

Several processes may share usr/ (cluster mode: nodes), each with its scheduler seeing
every task fall due. A due run starts only on the node that claims it first
(`Coordination.claim("fire:<task id>:<due time>")`); the others skip it silently, and
see it planned forward once they read the task list again (scheduler/store.py reads the
file again when another node changed it). The claimant plans the task forward only if it
is still due at the claimed time: a run another node fired already (under a claim that
has since expired, or one Redis forgot in a restart) is not fired twice.

When the claim cannot be asked for (Redis does not answer), no node fires: the log says so
once per outage, in words, and the task stays due, so it fires once the claim can be asked
for again. A process alone grants itself every claim (scheduler/coordination.py `Solo`).

A run marked going on in tasks.json that no process of this node runs was cut short by a
stop, or goes on in another node: `cut_short` tells them apart by the live nodes (one that
started before the run began may have it going; it is left to it).
"""

from __future__ import annotations

import logging
from datetime import datetime

from helpers.errors import NotFound, Unavailable, UserError
from scheduler.coordination import Coordination
from scheduler.store import TaskStore
from scheduler.tasks import Task, next_run

log = logging.getLogger(__name__)

#: Seconds a node's claim on one due run lives. It outlives by far the moment between the
#: claim and the task planned forward on disk (milliseconds), after which no node sees that
#: run due; if the claimant dies between the two, another node fires the run once the claim
#: has expired (planning only a task still due then keeps it from firing twice).
CLAIM_TTL = 60.0


class DueRuns:
    """The due tasks of `store`, and which of their runs this process fires."""

    def __init__(self, store: TaskStore, coordination: Coordination) -> None:
        self.store = store
        self.coordination = coordination
        #: Whether the last claim or plan failed for want of the cluster: said once.
        self._unreachable = False

    def tasks(self, now: datetime) -> list[Task]:
        """The tasks due at `now` (enabled, their next run at or before it)."""
        return [t for t in self.store.all() if t.enabled and t.next_run and t.next_run <= now]

    def take(self, task: Task, now: datetime) -> bool:
        """Whether this process fires `task`'s run due at its `next_run` (or skips it, for
        one missed while Cadre was stopped): claimed here first, and the task planned
        forward from it. False leaves the run to another node, or due (the cluster away)."""
        return self._claimed(task) and self._planned(task, now)

    def cut_short(self, task: Task) -> bool:
        """Whether this process records the run of `task` marked going on (none of its own)
        as cut short: no other live process may have it going (none alive that started
        before it began), and this process claimed it first (nodes starting together record
        it, and start it again, once). Unavailable when the cluster cannot say."""
        assert task.running_since is not None  # a run marked going on
        if self.coordination.another_alive_since(task.running_since.timestamp()):
            log.info("task %s (%s): its run marked going on since %s may be another node's:"
                     " left to it", task.id, task.name, task.running_since)  # fmt: skip
            return False
        return self.coordination.claim(f"cut:{task.id}:{task.running_since.isoformat()}",
                                       CLAIM_TTL)  # fmt: skip

    def _claimed(self, task: Task) -> bool:
        assert task.next_run is not None  # a due task's
        try:
            won = self.coordination.claim(f"fire:{task.id}:{task.next_run.isoformat()}",
                                          CLAIM_TTL)  # fmt: skip
        except Unavailable as exc:
            self._away(exc)
            return False
        if self._unreachable:
            self._unreachable = False
            log.info("due tasks can be claimed again: the scheduler runs them")
        if not won:
            log.debug("task %s (%s): its run due at %s is another node's", task.id, task.name,
                      task.next_run)  # fmt: skip
        return won

    def _away(self, exc: Unavailable) -> None:
        if not self._unreachable:
            self._unreachable = True
            log.error("due tasks are not run now: %s. They stay due, and run once the cluster"
                      " answers again", exc)  # fmt: skip

    def _planned(self, task: Task, now: datetime) -> bool:
        """`task` planned forward from its run due at its `next_run`; False when it is no
        longer due then (planned meanwhile: another node fired that run), is gone, cannot be
        planned, or the task list cannot be changed now (the claimed run is fired once its
        claim has expired).

        A task whose cron or time zone no longer reads (tasks.json edited by hand, or
        restored from a machine with other time zones) is marked with the reason and
        planned no more: raised, it would stop Cadre's start (catch_up) and every other
        task due after it in each round.
        """

        def plan(current: Task) -> Task:
            if current.next_run != task.next_run:
                raise _Moved  # before anything is written
            return current.model_copy(update={"next_run": next_run(current, now)})

        try:
            self.store.update(task.id, plan)
        except (NotFound, _Moved):
            return False  # deleted meanwhile, or that run was fired
        except Unavailable as exc:
            self._away(exc)
            return False
        except UserError as exc:
            log.error("task %s cannot be planned: %s", task.id, exc)
            why = f"this task cannot be planned: {exc}; fix it and save it again"
            self.store.update(task.id, lambda t: t.model_copy(
                update={"next_run": None, "last_status": "error", "last_result": why}))  # fmt: skip
            return False
        return True


class _Moved(Exception):  # noqa: N818 - a signal within `_planned`, never raised beyond
    """The task is no longer due at the time it was claimed for: planned meanwhile."""
