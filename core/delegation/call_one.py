"""`call_subordinate`: hand a subtask to a subordinate agent and wait for its answer.

The contract (docs/architecture.md, "Delegation"): `message`, optional `profile` (alias
`agent_profile`) and `reset`. A new subordinate (number + 1, same chat) is
made when there is none or `reset` is true; an existing one keeps its
profile unless the call says `reset=true`. The subordinate's final answer is
the tool result; a long one carries a hint to cite it with `§§include`. How
the answer (or a failure) is handed up is core/delegation/handover.py's (`run_subordinate`),
the same here as for a chain resumed after a restart.
Two guards stop delegation from running away (core/delegation/steps.py): a maximum
depth, and a subordinate that would pass its own task on unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import field_validator

from core.delegation import handover
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
from core.tool import Response, Tool
from helpers.errors import RepairableException
from profiles import catalog

if TYPE_CHECKING:
    from core.log import LogItem


class CallSubordinateArgs(DelegatedTask):
    reset: bool = False

    @field_validator("reset", mode="before")
    @classmethod
    def _reset_flag(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if value is None or value == "":
            return False
        if not isinstance(value, bool):
            raise ValueError("reset must be true or false")
        return value


class CallSubordinate(Tool):
    """The `call_subordinate` tool: runs a subordinate agent on a subtask."""

    Args = CallSubordinateArgs

    async def execute(self, args: CallSubordinateArgs) -> Response:
        superior = agent_of(self.ctx)
        requested = validate_subordinate_profile(superior, args.profile)
        existing = superior.subordinate
        keep = existing is not None and not args.reset
        if existing is not None and keep and requested:
            current = existing.config.profile
            if current != requested:
                raise RepairableException(
                    superior.read_prompt(
                        "fw.call_sub.reset_required.md",
                        current=current or "default",
                        requested=requested,
                    )
                )
        check_depth(superior)
        runs_as = existing.config.profile if keep and existing is not None else requested
        check_runaway(superior, args.message, runs_as or catalog.DEFAULT_SUBORDINATE_PROFILE)

        if keep and existing is not None:
            subordinate = existing
            # One of several siblings (call_subordinates) goes on alone: the others are done.
            if len(superior.subordinates) > 1:
                superior.link_subordinate(existing)
        else:
            subordinate = new_subordinate(superior, requested)
            superior.link_subordinate(subordinate)  # one replaced by a reset is cut loose
        if self.log is not None:
            self.log.update(
                kvps={"subordinate": subordinate.agent_name, "profile": subordinate.config.profile}
            )
        give_budgets(superior, subordinate, args.budget)
        give_task(subordinate, args.message)
        handed = await handover.run_subordinate(superior, subordinate)
        if handed.failed:
            # The subordinate cannot go on; its superior may still: it is told and decides.
            raise RepairableException(handed.text)
        additional = {"hint": handed.hint} if handed.hint else None
        return Response(message=handed.text, break_loop=False, additional=additional)

    def get_log_object(self) -> LogItem:
        return self.ctx.log_row("subagent", "Calling subordinate agent", kvps=self.args)
