"""The steps of a delegation, shared by `call_subordinate`, `call_subordinates` and `handoff`.

Which profiles an agent may call (profiles/catalog.allowed_subordinates) and
the check of a requested one; the task arguments every delegation takes; a new
subordinate's name, settings, budgets and task; the depth and runaway guards.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, Field, field_validator

from core.agent_config import agent_config, profile_overrides
from core.agent_types import UserMessage
from core.budget import Limits, Scope
from core.tool import ToolArgs
from helpers.errors import RepairableException
from profiles import catalog

if TYPE_CHECKING:
    from core.agent import Agent

#: How alike two task texts must be to count as the same task handed on.
RUNAWAY_SIMILARITY = 0.9


class DelegatedTask(ToolArgs):
    """One task for a subordinate: what every delegation's arguments hold."""

    message: str = Field(min_length=1, description="The task: role, goal and concrete steps.")
    profile: str = Field(default="", validation_alias=AliasChoices("profile", "agent_profile"))
    #: A smaller budget for this subordinate (and its own subordinates), within the superior's.
    budget: Limits | None = None

    @field_validator("profile", mode="before")
    @classmethod
    def _profile_text(cls, value: Any) -> Any:
        return "" if value is None else value


def subordinate_profile_labels(agent: Agent) -> dict[str, str]:
    """Profile key → title, for the profiles this agent may call (catalog.allowed_subordinates)."""
    offered = catalog.subordinate_profiles(agent.chat.project_ref)
    allowed = catalog.allowed_subordinates(agent.config.profile, agent.chat.project_ref)
    return {name: offered[name].title or name for name in allowed if name in offered}


def validate_subordinate_profile(agent: Agent, profile: str) -> str:
    """ "" for the default profile, the stripped name of an allowed one; otherwise repairable."""
    name = str(profile or "").strip()
    labels = subordinate_profile_labels(agent)
    offered = catalog.subordinate_profiles(agent.chat.project_ref)
    default = catalog.DEFAULT_SUBORDINATE_PROFILE
    # No profile means the default one, unless a `subordinates` rule leaves that out.
    if name in labels or (not name and (default in labels or labels.keys() == offered.keys())):
        return name
    available = ", ".join(f"{key} ({title})" for key, title in sorted(labels.items()))
    if not name or name in offered:  # it exists, but this agent may not call it
        raise RepairableException(
            agent.read_prompt(
                "fw.call_sub.profile_not_allowed.md",
                profile=name or default,
                caller=agent.config.profile,
                available=available or "none",
            )
        )
    raise RepairableException(
        agent.read_prompt("fw.call_sub.profile_not_found.md", profile=name, available=available)
    )


#: Characters of each end of a task compared by the runaway guard. The whole
#: text would cost quadratic time on the agents' loop (seconds for 20 KB).
SIMILARITY_SPAN = 2_000


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def is_same_task(a: str, b: str) -> bool:
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


def new_subordinate(superior: Agent, profile: str, place: int = 0) -> Agent:
    """A new subordinate of `superior` (not linked yet): the chat's settings, then its
    profile's. Its name keeps the path of sibling places above it, so every agent of a
    chat has its own: A2 under A1, A2.2 under A1.2; `place` k > 0 makes it a sibling
    (".k" more: A1.k under A0, A2.2.k under A1.2)."""
    chosen = profile or catalog.DEFAULT_SUBORDINATE_PROFILE
    overrides = {
        **superior.chat.config.overrides,
        **profile_overrides(chosen, superior.chat.project_ref, superior.chat.owner),
        "agent_profile": chosen,
    }
    path = superior.agent_name[len(f"A{superior.number}") :]
    name = f"A{superior.number + 1}{path}" + (f".{place}" if place else "")
    config = agent_config(overrides, superior.chat.project, superior.chat.owner)
    # Through its superior's model seam: a program's own, a benchmark's, a replay's.
    config = dataclasses.replace(config, model_for=superior.config.model_for)
    return superior.make_subordinate(config, name)


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
    subordinate.add_user_message(UserMessage(message=message))


def check_depth(superior: Agent) -> None:
    """A subordinate of `superior` must not pass the chat's deepest delegation."""
    # A chat-wide guard: the chat's settings decide, not the profile of this agent.
    limit = superior.chat.config.settings.max_delegation_depth
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
    if profile == superior.config.profile and is_same_task(message, own_task):
        raise RepairableException(superior.read_prompt("fw.call_sub.runaway.md"))
