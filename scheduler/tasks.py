"""What a task is: what a person (the panel, the API, an agent) gives, and what Cadre keeps.

`TaskSpec` is the task as a person describes it; `validated` checks it as a whole
(a cron for a scheduled task, times for a planned one, a real time zone, an
available profile, an existing project) and puts it in its tidy form. `Task` adds
what Cadre keeps about it: its id and owner, when it runs next, its last run and
result, and its chat.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helpers.errors import UserError
from profiles.catalog import get_available_agents_dict
from profiles.projects import ProjectLike, ProjectRef, place_of, project_dir
from scheduler import timing

Kind = Literal["scheduled", "planned", "adhoc"]
#: How a task's last run ended ("": it has not run yet; "interrupted": Cadre stopped, or was
#: killed, while it ran).
Status = Literal["", "success", "error", "interrupted"]


class TaskSpec(BaseModel):
    """A task as a person describes it (the body of `POST /api/v1/tasks`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1, max_length=100_000)
    kind: Kind
    #: A five-field cron expression (scheduled tasks).
    cron: str = ""
    #: The IANA time zone the cron and the planned times are read in ("": the server's).
    timezone: str = ""
    #: ISO date-times (planned tasks); a time without an offset is read in `timezone`.
    at: list[str] = Field(default_factory=list, max_length=1000)
    #: Agent 0's profile ("": the default one).
    profile: str = ""
    project: str = ""
    #: Every run in one chat of the task's own (True), or a new chat per run (False).
    dedicated_chat: bool = True
    enabled: bool = True
    #: A run missed while Cadre was stopped runs once at start (True) or is skipped.
    run_missed: bool = True


class TaskPatch(BaseModel):
    """A change to a task (`PATCH /api/v1/tasks/<id>`): the fields given replace the task's."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    prompt: str | None = None
    kind: Kind | None = None
    cron: str | None = None
    timezone: str | None = None
    at: list[str] | None = None
    profile: str | None = None
    project: str | None = None
    dedicated_chat: bool | None = None
    enabled: bool | None = None
    run_missed: bool | None = None


class Task(TaskSpec):
    """A task as Cadre keeps it (saved in usr/scheduler/tasks.json)."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    #: The user whose task it is (who made it: on the page, with their API key, or their
    #: chat's agent); its runs are theirs. None: made before accounts (the first admin's)
    #: or in the desktop mode. Cadre sets it, never a person's body (TaskSpec forbids it).
    owner: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    #: When it runs next (UTC); None: not planned (ad hoc, disabled, or no time left).
    next_run: datetime | None = None
    #: When its last run started, how it ended, and Agent 0's answer or the error.
    last_run: datetime | None = None
    last_status: Status = ""
    last_result: str = ""
    #: When the run going on started; saved, so that a run Cadre's stop or kill cut short
    #: is known at the next start (scheduler/service.py, `interrupted`). None: none goes on.
    running_since: datetime | None = None
    #: Its dedicated chat, or the chat of its last run.
    chat_id: str = ""

    def spec(self) -> TaskSpec:
        return TaskSpec.model_validate(self.model_dump(include=set(TaskSpec.model_fields)))


def validated(spec: TaskSpec, space: Path | None = None) -> TaskSpec:
    """`spec` checked as a whole and tidied, its project and profile looked for in the
    owner's `space` (None: usr/); UserError saying what to fix."""
    where = timing.zone(spec.timezone)
    changes: dict[str, object] = {"name": spec.name.strip(), "timezone": spec.timezone.strip()}
    if not changes["name"]:
        raise UserError("name: a task needs a name")
    if not spec.prompt.strip():
        raise UserError("prompt: a task needs a prompt")
    if spec.kind == "scheduled":
        if not spec.cron.strip():
            raise UserError("cron: a scheduled task needs a cron expression, e.g. '0 9 * * *'")
        changes["cron"] = timing.check_cron(spec.cron)
        timing.next_cron(str(changes["cron"]), where, datetime.now(UTC))  # one that never comes
    elif spec.cron.strip():
        raise UserError(f"cron: only a scheduled task has one (this task is {spec.kind})")
    if spec.kind == "planned":
        if not spec.at:
            raise UserError("at: a planned task needs at least one date-time")
        changes["at"] = [t.isoformat() for t in timing.parse_at(spec.at, where)]
    elif spec.at:
        raise UserError(f"at: only a planned task has planned times (this task is {spec.kind})")
    if spec.profile.strip():
        changes["profile"] = spec.profile.strip()
    if spec.project.strip():
        changes["project"] = spec.project.strip()
        if not project_dir(_placed(spec.project.strip(), space)).is_dir():
            raise UserError(f"project: there is no project {spec.project.strip()!r}")
    project = _place(spec.project.strip(), space)
    if spec.profile.strip() and spec.profile.strip() not in get_available_agents_dict(project):
        raise UserError(f"profile: no available agent profile {spec.profile.strip()!r}")
    return spec.model_copy(update=changes)


def next_run(task: TaskSpec, after: datetime) -> datetime | None:
    """When `task` is due next, strictly after `after`; None when it is not due at all."""
    if not task.enabled:
        return None
    where = timing.zone(task.timezone)
    if task.kind == "scheduled":
        # Checked again: a task read from disk (edited by hand, or restored) was not.
        return timing.next_cron(timing.check_cron(task.cron), where, after)
    if task.kind == "planned":
        return timing.next_planned(timing.parse_at(task.at, where), after)
    return None


def _placed(name: str, space: Path | None) -> ProjectLike:
    return ProjectRef(name, space) if space is not None else name


def _place(name: str, space: Path | None) -> ProjectLike | None:
    """Where the task's profile is looked for: its project (`name`) in the owner's space;
    without one, their space alone (their own profiles: profiles/projects.py `place_of`)."""
    return place_of(name or None, space) if space is not None else (name or None)
