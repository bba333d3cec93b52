"""Agent Zero's tasks.json read as Cadre tasks: a damaged file is reported and nothing
is imported from it; a task Cadre cannot take is left with why, the others come in."""

from __future__ import annotations

import json

from scheduler.agent_zero import import_tasks
from scheduler.store import TaskStore
from store.agent_zero.common import Report
from tests.support import agent_zero_v1 as v1


def test_a_damaged_tasks_file_is_reported_and_nothing_imported(tmp_path, usr_dir):
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "tasks.json").write_text('{"tasks": [')
    report = Report()

    import_tasks(tmp_path, False, report)

    assert TaskStore().all() == []
    assert any("tasks.json" in line and "damaged" in line for line in report.skipped)


def test_each_task_is_taken_or_left_on_its_own(tmp_path, usr_dir):
    rows = [v1.task("planned"), v1.task("planned", uuid="TaskOld1", name="past",
                                        plan={"todo": ["2001-01-01T00:00:00Z"]}),
            {"uuid": "../escape", "type": "adhoc"}, "not an object", v1.task("weekly")]  # fmt: skip
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "tasks.json").write_text(json.dumps({"tasks": rows}))
    report = Report()

    import_tasks(tmp_path, False, report)

    assert [t.id for t in TaskStore().all()] == [v1.TASK_IDS["planned"]]
    assert len(report.skipped) == 4 and len(report.done) == 1
    assert any("'past'" in line and "passed" in line for line in report.skipped)
