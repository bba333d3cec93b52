"""Budgets: caps on what a chat, or one delegation, may spend.

A `Scope` counts usage against `Limits` (tokens, cost, model calls,
seconds). Every agent works under its chat's scope and under the scope of
each delegation above it, so a budget given to a subordinate also bounds
the subordinates it starts. When a scope runs out, the agent is told to
answer now (`Grace.WARNED`), gets one more model call (`Grace.LAST_CALL`),
and after that the run stops with a clear error. Nothing is lost: with a
larger budget, the next message goes on from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from helpers.errors import BudgetExhausted, RunError
from models.llm import Usage

if TYPE_CHECKING:
    from helpers.settings import Settings


class Limits(BaseModel):
    """Caps; 0 means no cap."""

    tokens: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0)
    calls: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0)

    def any(self) -> bool:
        return bool(self.tokens or self.cost or self.calls or self.seconds)

    def within(self, outer: Limits) -> Limits:
        """These limits, each no larger than `outer`'s where `outer` has one."""

        def smaller(mine: float, theirs: float) -> float:
            return min(mine, theirs) if mine and theirs else (mine or theirs)

        return Limits(
            tokens=int(smaller(self.tokens, outer.tokens)),
            cost=smaller(self.cost, outer.cost),
            calls=int(smaller(self.calls, outer.calls)),
            seconds=smaller(self.seconds, outer.seconds),
        )


class Grace(Enum):
    NONE = 0
    WARNED = 1
    LAST_CALL = 2


@dataclass
class Scope:
    """Usage counted against limits since the scope began."""

    name: str
    limits: Limits
    spent: Usage = field(default_factory=Usage)
    began: float = field(default_factory=time.monotonic)
    grace: Grace = Grace.NONE

    def remaining(self) -> Limits:
        """What is left, as limits: 0 where there is no cap, the least amount where it is used up
        (0 would read as "no cap")."""
        used = self.used()

        def left(kind: str, least: float) -> float:
            cap = getattr(self.limits, kind)
            return max(least, cap - used[kind]) if cap else 0

        return Limits(
            tokens=int(left("tokens", 1)),
            cost=left("cost", 1e-9),
            calls=int(left("calls", 1)),
            seconds=left("seconds", 1e-3),
        )

    def used(self) -> dict[str, float]:
        return {
            "tokens": self.spent.total_tokens,
            "cost": self.spent.cost,
            "calls": self.spent.calls,
            "seconds": time.monotonic() - self.began,
        }

    def exhausted(self) -> str:
        """Which cap is used up ('' while none is), in words."""
        used = self.used()
        units = {"tokens": "tokens", "cost": "USD", "calls": "model calls", "seconds": "seconds"}
        for kind, unit in units.items():
            cap = getattr(self.limits, kind)
            if cap and used[kind] >= cap:
                return f"{self.name}: {_num(used[kind])} of {_num(cap)} {unit} used"
        return ""

    def describe(self) -> str:
        """'12,000 tokens, 3 model calls left' (only the capped kinds)."""
        left = self.remaining()
        parts = []
        if self.limits.tokens:
            parts.append(f"{left.tokens:,} tokens")
        if self.limits.cost:
            parts.append(f"{left.cost:.4f} USD")
        if self.limits.calls:
            parts.append(f"{left.calls} model calls")
        if self.limits.seconds:
            parts.append(f"{left.seconds:.0f} seconds")
        return f"{self.name}: " + ", ".join(parts) + " left"


def chat_scope(settings: Settings, usage: Usage) -> Scope:
    """The chat's budget for one run: the `budget_*` settings over the chat's whole usage."""
    limits = Limits(
        tokens=settings.budget_tokens,
        cost=settings.budget_cost,
        calls=settings.budget_calls,
        seconds=settings.budget_seconds,
    )
    return Scope("chat budget", limits, spent=usage)


def check(scopes: list[Scope], read_prompt: Callable[..., str]) -> None:
    """Before a model call: past a budget, warn once, allow one last call, then stop."""
    for scope in scopes:
        reason = scope.exhausted()
        if not reason:
            continue
        if scope.grace is Grace.NONE:
            scope.grace = Grace.WARNED
            raise BudgetExhausted(read_prompt("fw.budget_exhausted.md", reason=reason))
        if scope.grace is Grace.WARNED:
            scope.grace = Grace.LAST_CALL
            continue
        raise RunError(read_prompt("fw.budget_stopped.md", reason=reason))


def left(scopes: list[Scope]) -> str:
    """What is left of every capped budget, a line each ('' when none is capped)."""
    return "\n".join(s.describe() for s in scopes if s.limits.any())


def _num(value: float) -> str:
    return f"{value:,.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"
