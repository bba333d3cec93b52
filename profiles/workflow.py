"""Workflow profiles: a fixed workflow declared in agent.yaml instead of free delegation.

`workflow: {sequential: [researcher, writer]}` runs the steps one after the
other, each on the previous step's answer; `workflow: {parallel: [a, b],
aggregate: judge}` runs the parallel steps at once on the task and gives the
aggregate profile the task with every answer (a mixture of agents). Here the
declaration is read and checked; core/delegation/workflow.py runs it. A declaration that
cannot run (an unknown step, an empty list, both kinds, a workflow that calls
itself) makes its profile unusable with the reason, like any bad agent.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["sequential", "parallel"]


@dataclass(frozen=True)
class Workflow:
    """A profile's declared workflow: its kind, its steps (profile names) and, for a
    parallel one, the profile that aggregates the answers."""

    kind: Kind
    steps: tuple[str, ...]
    aggregate: str = ""

    @property
    def profiles(self) -> tuple[str, ...]:
        """Every profile the workflow calls."""
        return self.steps + ((self.aggregate,) if self.aggregate else ())


def parse_workflow(value: Any) -> Workflow | None:
    """agent.yaml's `workflow` (None when absent); ValueError says what is wrong."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("agent.yaml: workflow must be a mapping (sequential: or parallel:)")
    unknown = sorted(set(value) - {"sequential", "parallel", "aggregate"})
    if unknown:
        raise ValueError(f"agent.yaml: workflow: unknown key(s) {', '.join(map(str, unknown))}")
    kinds = [kind for kind in ("sequential", "parallel") if kind in value]
    if len(kinds) != 1:
        raise ValueError("agent.yaml: workflow needs exactly one of sequential or parallel")
    kind: Kind = kinds[0]
    steps = value[kind]
    if not isinstance(steps, list) or not all(isinstance(s, str) and s.strip() for s in steps):
        raise ValueError(f"agent.yaml: workflow: {kind} must be a list of profile names")
    if not steps:
        raise ValueError(f"agent.yaml: workflow: {kind} is empty")
    aggregate = value.get("aggregate")
    if kind == "sequential":
        if aggregate is not None:
            raise ValueError("agent.yaml: workflow: aggregate goes with parallel, not sequential")
        return Workflow(kind, tuple(s.strip() for s in steps))
    if len(steps) < 2:
        raise ValueError("agent.yaml: workflow: parallel needs two steps at least")
    if not isinstance(aggregate, str) or not aggregate.strip():
        raise ValueError("agent.yaml: workflow: parallel needs aggregate: <profile name>")
    return Workflow(kind, tuple(s.strip() for s in steps), aggregate.strip())


def workflow_problem(
    name: str, flows: dict[str, Workflow], usable: set[str], allowed: set[str]
) -> str:
    """Why the workflow of profile `name` cannot run ("" if it can): a step that is no
    usable subordinate profile, one the profile may not call (its `subordinates:` or its
    project's rule), or a workflow that reaches itself through its steps."""
    own = flows[name]
    missing = [p for p in own.profiles if p not in usable]
    if missing:
        return (
            f"agent.yaml: workflow: {', '.join(sorted(set(missing)))} is not an available "
            "subordinate profile"
        )
    barred = [p for p in own.profiles if p not in allowed]
    if barred:
        return (
            f"agent.yaml: workflow: {', '.join(sorted(set(barred)))} is not among the "
            "profiles it may call (subordinates:)"
        )
    seen: set[str] = set()
    todo = list(own.profiles)
    while todo:  # every workflow reachable from this one's steps
        step = todo.pop()
        if step == name:
            return "agent.yaml: workflow: it includes itself (through its steps)"
        if step not in seen and step in flows:
            seen.add(step)
            todo.extend(flows[step].profiles)
    return ""
