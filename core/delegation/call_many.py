"""`call_subordinates`: hand several independent subtasks to subordinates working at once.

Each task gets its own new subordinate, a sibling named A<n>.<k> (k = the
task's place, from 1; under a sibling the path goes on: A2.2.k under A1.2);
they run at the same time on the agents' loop (core/delegation/parallel.py) and the tool
result lists every answer, labelled with the sibling's name and profile, in
task order. A sibling that fails (or runs out
of budget) is reported there; the others' answers are kept. Every task is
checked as `call_subordinate` checks its one (profile, depth, runaway: the
same functions, imported) before any sibling starts, so a bad call changes
nothing. What budget the superior has left is shared: each sibling gets an
equal part of it (model calls: less the one last call a budget grants past its
cap), so together they never make more calls than were left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from core.budget import Limits
from core.delegation import parallel
from core.delegation.steps import (
    DelegatedTask,
    check_depth,
    check_runaway,
    give_budgets,
    give_task,
    new_subordinate,
    validate_subordinate_profile,
)
from core.run_context import agent_of
from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException
from profiles import catalog

if TYPE_CHECKING:
    from core.agent import Agent
    from core.log import LogItem


class CallSubordinatesArgs(ToolArgs):
    #: Two at least: one task is `call_subordinate`'s.
    tasks: list[DelegatedTask] = Field(min_length=2, description="The independent subtasks.")


class CallSubordinates(Tool):
    """The `call_subordinates` tool: runs one sibling subordinate per task, all at once."""

    Args = CallSubordinatesArgs

    async def execute(self, args: CallSubordinatesArgs) -> Response:
        superior = agent_of(self.ctx)
        limit = superior.chat.config.settings.max_parallel_subordinates
        if len(args.tasks) > limit:
            raise RepairableException(
                superior.read_prompt(
                    "fw.call_subordinates.too_many.md", limit=limit, count=len(args.tasks)
                )
            )
        profiles = [validate_subordinate_profile(superior, task.profile) for task in args.tasks]
        check_depth(superior)
        for task, profile in zip(args.tasks, profiles, strict=True):
            check_runaway(superior, task.message, profile or catalog.DEFAULT_SUBORDINATE_PROFILE)

        siblings = [
            new_subordinate(superior, profile, place=k)
            for k, profile in enumerate(profiles, start=1)
        ]
        superior.link_siblings(siblings)  # the subordinates they replace are cut loose
        share = _share(superior, len(siblings))
        for sibling, task in zip(siblings, args.tasks, strict=True):
            give_budgets(superior, sibling, _within(task.budget, share))
            give_task(sibling, task.message)
        if self.log is not None:
            self.log.update(
                kvps={
                    "subordinates": [s.agent_name for s in siblings],
                    "profiles": [s.config.profile for s in siblings],
                }
            )
        handed = parallel.batch_result(superior, await parallel.run_siblings(superior))
        additional = {"hint": handed.hint} if handed.hint else None
        return Response(message=handed.text, break_loop=False, additional=additional)

    def get_log_object(self) -> LogItem:
        tasks = self.args.get("tasks")  # not checked yet: the heading must not fail on it
        count = f"{len(tasks)} " if isinstance(tasks, list) else ""
        return self.ctx.log_row("subagent", f"Calling {count}subordinates at once", kvps=self.args)


def _share(superior: Agent, count: int) -> Limits | None:
    """An equal part of what `superior` has left of every capped budget, or None."""
    capped = [s.remaining() for s in superior.budget_scopes() if s.limits.any()]
    if not capped:
        return None
    left = capped[0]
    for other in capped[1:]:
        left = left.within(other)
    return Limits(
        tokens=max(1, left.tokens // count) if left.tokens else 0,
        cost=left.cost / count,
        # A budget allows one last call past its cap (core/budget.py): kept back here, so
        # that all the siblings' calls together stay within what is left.
        calls=max(1, left.calls // count - 1) if left.calls else 0,
        seconds=left.seconds,  # time passes for all of them at once: not divided
    )


def _within(budget: Limits | None, share: Limits | None) -> Limits | None:
    if share is None:
        return budget
    return share if budget is None or not budget.any() else budget.within(share)
