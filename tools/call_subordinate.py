"""`call_subordinate`: hand a subtask to a subordinate agent and wait for its answer.

The contract (docs/architecture.md, "Delegation"): `message`, optional `profile` (alias
`agent_profile`) and `reset`. A new subordinate (number + 1, same chat) is
made when there is none or `reset` is true; an existing one keeps its
profile unless the call says `reset=true`. The subordinate's final answer is
the tool result; a long one carries a hint to cite it with `§§include`. How
the answer (or a failure) is handed up is core/handover.py's (`run_subordinate`),
the same here as for a chain resumed after a restart.
Two guards stop delegation from running away: a maximum depth, and a
subordinate that would pass its own task on unchanged.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, Field, field_validator

from agent import Agent, UserMessage
from core import handover
from core.budget import Limits, Scope
from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException
from initialize import agent_config
from profiles import catalog

if TYPE_CHECKING:
    from core.log import LogItem

#: How alike two task texts must be to count as the same task handed on.
RUNAWAY_SIMILARITY = 0.9


class CallSubordinateArgs(ToolArgs):
    message: str = Field(min_length=1, description="The task: role, goal and concrete steps.")
    profile: str = Field(default="", validation_alias=AliasChoices("profile", "agent_profile"))
    reset: bool = False
    #: A smaller budget for this subordinate (and its own subordinates).
    budget: Limits | None = None

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

    @field_validator("profile", mode="before")
    @classmethod
    def _profile_text(cls, value: Any) -> Any:
        return "" if value is None else value


def _subordinate_profile_labels(agent: Agent) -> dict[str, str]:
    """Profile key → title, for the profiles this chat's project offers subordinates."""
    return {
        name: profile.title or name
        for name, profile in catalog.subordinate_profiles(agent.context.project).items()
    }


def _validate_subordinate_profile(agent: Agent, profile: str) -> str:
    """ "" for the default profile, the stripped name of a known one; otherwise repairable."""
    name = str(profile or "").strip()
    if not name:
        return ""
    labels = _subordinate_profile_labels(agent)
    if name in labels:
        return name
    available = ", ".join(f"{key} ({title})" for key, title in sorted(labels.items()))
    raise RepairableException(
        agent.read_prompt("fw.call_sub.profile_not_found.md", profile=name, available=available)
    )


#: Characters of each end of a task compared by the runaway guard. The whole
#: text would cost quadratic time on the agents' loop (seconds for 20 KB).
SIMILARITY_SPAN = 2_000


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _is_same_task(a: str, b: str) -> bool:
    """Near-identical texts: equal once normalised, or ≥90 % alike at both ends."""
    a, b = _normalise(a), _normalise(b)
    if a == b:
        return True
    if min(len(a), len(b)) < RUNAWAY_SIMILARITY * max(len(a), len(b)):
        return False  # lengths too different to be the same task reworded

    def alike(x: str, y: str) -> bool:
        return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= RUNAWAY_SIMILARITY

    span = SIMILARITY_SPAN
    if max(len(a), len(b)) <= 2 * span:
        return alike(a, b)
    return alike(a[:span], b[:span]) and alike(a[-span:], b[-span:])


class CallSubordinate(Tool):
    """The `call_subordinate` tool: runs a subordinate agent on a subtask."""

    Args = CallSubordinateArgs

    async def execute(self, args: CallSubordinateArgs) -> Response:
        superior = self.agent
        requested = _validate_subordinate_profile(superior, args.profile)
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
        return self.agent.context.log.log(
            type="subagent",
            heading=f"{self.agent.agent_name}: Calling subordinate agent",
            kvps=self.args,
            agentno=self.agent.number,
        )


# -- the steps of a delegation, shared with call_subordinates ----------------------


def new_subordinate(superior: Agent, profile: str, place: int = 0) -> Agent:
    """A new subordinate of `superior` (not linked yet): the chat's settings, then its
    profile's. Its name keeps the path of sibling places above it, so every agent of a
    chat has its own: A2 under A1, A2.2 under A1.2; `place` k > 0 makes it a sibling
    (".k" more: A1.k under A0, A2.2.k under A1.2)."""
    chosen = profile or catalog.DEFAULT_SUBORDINATE_PROFILE
    overrides = {
        **superior.context.config.overrides,
        **catalog.profile_settings(chosen, superior.context.project),
        "agent_profile": chosen,
    }
    path = superior.agent_name[len(f"A{superior.number}") :]
    name = f"A{superior.number + 1}{path}" + (f".{place}" if place else "")
    return Agent(superior.number + 1, agent_config(overrides), superior.context, name)


def give_budgets(superior: Agent, subordinate: Agent, budget: Limits | None) -> None:
    """`subordinate` works under its superior's budgets, and under `budget` if given (never
    more than what the superior has left)."""
    subordinate.delegation_budgets = list(superior.delegation_budgets)
    if budget is not None and budget.any():
        outer = [s.remaining() for s in superior.budget_scopes() if s.limits.any()]
        limits = budget
        for left in outer:
            limits = limits.within(left)
        name = f"budget of {subordinate.agent_name}"
        subordinate.delegation_budgets.append(Scope(name, limits))


def give_task(subordinate: Agent, message: str) -> None:
    subordinate.task = message
    subordinate.hist_add_user_message(UserMessage(message=message))


def check_depth(superior: Agent) -> None:
    """A subordinate of `superior` must not pass the chat's deepest delegation."""
    # A chat-wide guard: the chat's settings decide, not the profile of this agent.
    limit = superior.context.config.settings.max_delegation_depth
    if superior.number + 1 > limit:
        raise RepairableException(
            superior.read_prompt(
                "fw.call_sub.max_depth.md", agent_number=superior.number, limit=limit
            )
        )


def check_runaway(superior: Agent, message: str, profile: str) -> None:
    """A subordinate must not pass its own task down unchanged to its own profile."""
    own_task = superior.task
    if not own_task or superior.superior is None:
        return
    if profile == superior.config.profile and _is_same_task(message, own_task):
        raise RepairableException(superior.read_prompt("fw.call_sub.runaway.md"))
