"""The `scheduler` tool: `scheduler:list`, `:create`, `:update`, `:delete` and `:run` tasks.

It works on the same tasks as the Scheduler panel and the API (scheduler/), checked
the same way, as its chat's owner: an agent sees and changes only the tasks of the
person whose chat it works in, and a task it makes is theirs. What is wrong comes
back to the agent as a repairable error naming the field to fix.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import Field, ValidationError

from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException, Unavailable, UserError
from scheduler.service import Scheduler
from scheduler.tasks import Kind, TaskPatch, TaskSpec

METHODS = ("list", "create", "update", "delete", "run")
#: The fields of a task an agent may give (create, update).
SPEC_FIELDS = tuple(TaskPatch.model_fields)


class SchedulerArgs(ToolArgs):
    task_id: str = Field(default="", description="update, delete, run: the task's id.")
    name: str | None = None
    prompt: str | None = Field(default=None, description="What Agent 0 is asked on each run.")
    kind: Kind | None = None
    cron: str | None = Field(default=None, description="scheduled: five-field cron expression.")
    timezone: str | None = Field(default=None, description="IANA time zone, e.g. Europe/Paris.")
    at: list[str] | None = Field(default=None, description="planned: ISO date-times.")
    profile: str | None = None
    project: str | None = None
    dedicated_chat: bool | None = None
    enabled: bool | None = None
    run_missed: bool | None = None


class SchedulerTool(Tool):
    """Lists and changes the scheduled tasks, and starts their runs."""

    Args = SchedulerArgs
    methods = METHODS

    async def execute(self, args: SchedulerArgs) -> Response:
        runtime = self.ctx.runtime
        scheduler = runtime.service(Scheduler) if runtime is not None else None
        if scheduler is None:
            raise RepairableException(self.ctx.read_prompt("fw.scheduler.unavailable.md"))
        if self.method not in ("list", "create") and not args.task_id:
            raise RepairableException(
                self.ctx.read_prompt("fw.scheduler.task_id_missing.md", method=self.method)
            )
        try:
            found = await asyncio.to_thread(self._act, scheduler, args)
        # Unavailable: a cluster's Redis away; the model is told so, and may try again later.
        except (UserError, Unavailable) as exc:
            raise RepairableException(
                self.ctx.read_prompt("fw.scheduler.refused.md", method=self.method, error=exc)
            ) from None
        return Response(message=json.dumps(found, indent=1, ensure_ascii=False))

    def _act(self, scheduler: Scheduler, args: SchedulerArgs) -> Any:
        given = args.model_dump(include=set(SPEC_FIELDS), exclude_none=True)
        # A chat from before accounts is the first admin's: so are the tasks its agents see.
        owner = scheduler.owners.whose(self.ctx.owner)
        if self.method == "list":
            return [scheduler.view(task) for task in scheduler.tasks(owner)]
        if self.method == "create":
            given.setdefault("project", self.ctx.project or "")
            return scheduler.view(scheduler.create(_checked(TaskSpec, given), owner))
        if self.method == "update":
            changed = scheduler.update(args.task_id, _checked(TaskPatch, given), owner)
            return scheduler.view(changed)
        if self.method == "delete":
            scheduler.delete(args.task_id, owner)
            return {"deleted": args.task_id}
        return {"started": scheduler.view(scheduler.run_now(args.task_id, owner))}


def _checked(model: type[TaskSpec] | type[TaskPatch], given: dict[str, Any]) -> Any:
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise UserError(f"{where}: {first['msg']}") from None
