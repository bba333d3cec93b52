"""What became of a task's run, in plain words: kept as the task's `last_result` and shown
in the Scheduler panel (scheduler/service.py)."""

from __future__ import annotations

import concurrent.futures

from scheduler.tasks import Task


def interrupted_words(task: Task, again: bool) -> str:
    """What became of a run Cadre's stop cut short, and what happens next, in plain words."""
    since = task.running_since or task.last_run
    when = f" that started at {since:%Y-%m-%d %H:%M:%S} UTC" if since else ""
    cut = f"the run{when} was cut short: Cadre stopped while it ran (stopped, killed or crashed)"
    if again:
        return f"{cut}; it is run again now, once"
    if task.last_status == "interrupted":
        return (f"{cut}, and so was the run before it: it is not run again at start (a run"
                " that keeps being cut short may be what stops Cadre); it runs at its next"
                " due time, or use Run now")  # fmt: skip
    if task.kind == "adhoc":
        return f"{cut}; use Run now to run it again"
    if not task.enabled:
        return f"{cut}; the task is disabled"
    return f"{cut}; it runs at its next due time (run_missed is off), or use Run now"


def failure_words(exc: BaseException) -> str:
    """How a run that raised `exc` ended, in words (the task's `last_result`)."""
    if isinstance(exc, concurrent.futures.CancelledError):
        return "the run was stopped"
    return str(exc) or type(exc).__name__
