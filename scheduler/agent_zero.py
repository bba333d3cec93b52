"""Agent Zero's scheduled tasks as Cadre's, and the `import-agent-zero` command with them.

Agent Zero (older layout and 1.x) keeps its tasks in `usr/scheduler/tasks.json`:
`{"tasks": [...]}`, each with `uuid`, `name`, `type` (`scheduled` with a
`schedule` of cron fields and a `timezone`, `planned` with a `plan` whose `todo`
holds the times still to come, `adhoc` run by hand), `system_prompt`, `prompt`,
`state` (`disabled` is off), `project_name`, `attachments`, and `context_id`
(equal to the uuid: a dedicated chat). Each becomes a Cadre task of the same id
(so a second run finds it), checked as a task made in the Tasks panel is; the
system prompt, which Cadre's tasks do not have, goes before the prompt. A task
that does not pass the checks is left with the reason, the others imported.

This layer brings the tasks because the importer (store/agent_zero/usr.py) sits
below the scheduler and may not reach it: `main` here is the command
`python3 cadre.py import-agent-zero` runs, the importer's with this one more part.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helpers.errors import UserError
from scheduler.store import TaskStore
from scheduler.tasks import Task, TaskSpec, next_run, validated
from store.agent_zero import usr
from store.agent_zero.common import KEEP, PLAIN, Report, readable

#: Largest tasks.json read.
LIMIT = 64 * 1024 * 1024
FILE = Path("scheduler", "tasks.json")


def import_tasks(source: Path, overwrite: bool, report: Report) -> None:
    path = source / FILE
    if not readable(source / "scheduler", report) or not readable(path, report):
        return
    if not path.is_file():
        return
    try:
        if path.stat().st_size > LIMIT:
            raise ValueError(f"over {LIMIT // 2**20} MB")
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data.get("tasks") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ValueError('no "tasks" list in it')
    except (OSError, ValueError) as exc:
        report.left(FILE.as_posix(), f"damaged, no task imported: {exc}")
        return
    store = TaskStore()
    now = datetime.now(UTC)
    for number, row in enumerate(rows, start=1):
        label = f"task {row.get('name')!r}" if isinstance(row, dict) else f"task #{number}"
        try:
            task = _task(row, now)
        except (UserError, ValueError, TypeError) as exc:
            report.left(label, f"not imported: {exc}")
            continue
        old = next((t for t in store.all() if t.id == task.id), None)
        if old is not None and old.spec() == task.spec():
            report.already(label)
        elif old is not None and not overwrite:
            report.left(label, KEEP)
        else:
            store.put(task)
            off = "" if task.enabled else " (switched off, as in Agent Zero)"
            report.did(f"{label} ({task.kind}){off}")


def _task(row: Any, now: datetime) -> Task:
    """One of Agent Zero's tasks as a Cadre task; ValueError or UserError saying why not."""
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    uuid = str(row.get("uuid") or "")
    if not PLAIN.fullmatch(uuid):
        raise ValueError("no plain uuid")
    kind = row.get("type")
    spec: dict[str, Any] = {"kind": kind, "name": str(row.get("name") or "")[:200]}
    prompt, system = str(row.get("prompt") or ""), str(row.get("system_prompt") or "")
    spec["prompt"] = f"{system.strip()}\n\n{prompt}" if system.strip() else prompt
    if kind == "scheduled":
        when = row.get("schedule") or {}
        fields = [str(when.get(k, "*")) for k in ("minute", "hour", "day", "month", "weekday")]
        spec["cron"] = " ".join(fields)
        spec["timezone"] = str(when.get("timezone") or "")
    elif kind == "planned":
        todo = (row.get("plan") or {}).get("todo") or []
        spec["at"] = [str(t) for t in todo]
        if not spec["at"]:
            raise ValueError("none of its planned times is left")
    elif kind != "adhoc":
        raise ValueError(f"unknown type {kind!r}")
    spec["project"] = str(row.get("project_name") or "")
    spec["enabled"] = row.get("state") != "disabled"
    spec["dedicated_chat"] = row.get("context_id") in (None, "", uuid)
    tidy = validated(TaskSpec.model_validate(spec))
    task = Task.model_validate({**tidy.model_dump(), "id": uuid})
    task.next_run = next_run(task, now)
    if task.kind == "planned" and task.enabled and task.next_run is None:
        raise ValueError("every planned time has passed")
    return task


def main(argv: list[str] | None = None) -> int:
    """The importer's command, with the scheduled tasks (store/agent_zero/usr.py `main`)."""
    return usr.main(argv, steps={"scheduler": import_tasks})


if __name__ == "__main__":
    sys.exit(main())
