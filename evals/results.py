"""What an evaluation found: each run of each task with its checks, tokens, cost and time;
the per-task summary; the JSON file it is saved as; and the comparison of two results.

The JSON is versioned (`version`); a result of another version, or a file that is not a
result, is a `ResultError` in plain words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

#: The JSON result's format (bump with a migration when it changes).
VERSION = 1


class ResultError(ValueError):
    """A result file that cannot be read as one, and why."""


class CheckResult(BaseModel):
    kind: str
    description: str
    passed: bool
    #: Why it failed (or the judge's reason either way).
    detail: str = ""


class Run(BaseModel):
    """One task run once in its own chat."""

    task: str
    attempt: int = 1
    chat_id: str = ""
    passed: bool = False
    answer: str = ""
    #: Why the run gave no answer (stopped, timed out, the provider failed), else "".
    error: str = ""
    checks: list[CheckResult] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0


class TaskSummary(BaseModel):
    name: str
    runs: int
    passed: int
    tokens: int
    cost: float
    seconds: float

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


class EvalResult(BaseModel):
    version: int = VERSION
    suite: str
    suite_path: str = ""
    profile: str
    model: str = ""
    repeat: int = 1
    started_at: float = 0.0
    seconds: float = 0.0
    #: The task names in the suite's order (a task no run finished is still listed).
    tasks: list[str] = Field(default_factory=list)
    runs: list[Run] = Field(default_factory=list)

    def summaries(self) -> list[TaskSummary]:
        """Per task: its runs, how many passed, their tokens, cost and time summed."""
        found = []
        for name in self.tasks or list(dict.fromkeys(run.task for run in self.runs)):
            mine = [run for run in self.runs if run.task == name]
            found.append(TaskSummary(
                name=name, runs=len(mine), passed=sum(run.passed for run in mine),
                tokens=sum(run.tokens for run in mine), cost=sum(run.cost for run in mine),
                seconds=sum(run.seconds for run in mine),
            ))  # fmt: skip
        return found

    @property
    def passed(self) -> int:
        return sum(run.passed for run in self.runs)

    @property
    def total(self) -> int:
        return len(self.runs)


def save_result(result: EvalResult, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    return path


def load_result(path: Path) -> EvalResult:
    """A saved result; ResultError when the file is missing, not JSON or not a result."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultError(f"cannot read the result {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ResultError(f"{path} is not an evaluation result of this Cadre (version {VERSION})")
    try:
        return EvalResult.model_validate(data)
    except ValidationError as exc:
        raise ResultError(
            f"{path} is not a valid evaluation result: {exc.errors()[0]['msg']}"
        ) from exc


Change = Literal["better", "worse", "same", "new", "gone"]


class TaskChange(BaseModel):
    """A task's pass rate before and now (None where it was not run)."""

    name: str
    before: float | None
    now: float | None
    change: Change


def compare(old: EvalResult, new: EvalResult) -> list[TaskChange]:
    """Each task of either result: its pass rate in both and whether it got better or worse
    (the new result's tasks first, in its order; then those only the old one had)."""
    before = {s.name: s.rate for s in old.summaries() if s.runs}
    now = {s.name: s.rate for s in new.summaries() if s.runs}
    changes = []
    for name in [*now, *(n for n in before if n not in now)]:
        was, is_ = before.get(name), now.get(name)
        if was is None:
            change: Change = "new"
        elif is_ is None:
            change = "gone"
        else:
            change = "better" if is_ > was else "worse" if is_ < was else "same"
        changes.append(TaskChange(name=name, before=was, now=is_, change=change))
    return changes
