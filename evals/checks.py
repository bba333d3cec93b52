"""Judging one run of a task: each check of the suite against what the run left (its answer,
the work folder, the tools called, the model calls and their cost).

A judge check asks the utility model through `Grader` (given by the runner: the run's chat
makes the call, so it shows in that chat's log); the command check runs the suite's
command with the shell in the work folder, on this machine (the suite is the admin's
file, as a profile's commands are).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evals.results import CheckResult
from evals.suite import (
    Check,
    Command,
    Contains,
    FileHas,
    Judge,
    MaxCalls,
    MaxCost,
    Regex,
    ToolCalled,
    ToolNotCalled,
)
from helpers.confine import PathRefused, read_inside, resolve_inside

log = logging.getLogger(__name__)

#: Seconds a command check may take before it counts as failed.
COMMAND_TIMEOUT = 120.0
#: Characters of a command's output kept in a failed check's detail.
OUTPUT_KEPT = 300
#: Most bytes of a file a `file` check reads (a task's output, not a data set).
FILE_READ_LIMIT = 10_000_000

#: Grades an answer against a rubric: (passed, reason).
Grader = Callable[[str, str], tuple[bool, str]]


@dataclass
class Outcome:
    """What one run left for the checks to look at."""

    answer: str
    work_dir: Path
    tools: list[str] = field(default_factory=list)
    calls: int = 0
    cost: float = 0.0


def run_checks(checks: list[Check], outcome: Outcome, grade: Grader) -> list[CheckResult]:
    return [_one(check, outcome, grade) for check in checks]


def _one(check: Check, outcome: Outcome, grade: Grader) -> CheckResult:
    try:
        passed, detail = _judge(check, outcome, grade)
    except Exception as exc:  # noqa: BLE001 - a check that cannot look fails, saying why
        log.warning("evaluation check %r could not run: %s", check.describe(), exc)
        passed, detail = False, f"the check could not run: {type(exc).__name__}: {exc}"
    return CheckResult(kind=check.kind, description=check.describe(), passed=passed, detail=detail)


def _judge(check: Check, outcome: Outcome, grade: Grader) -> tuple[bool, str]:
    answer = outcome.answer
    match check:
        case Contains():
            found = check.contains.lower() in answer.lower()
            return found, "" if found else "not in the answer"
        case Regex():
            found = re.search(check.regex, answer) is not None
            return found, "" if found else "the answer does not match"
        case FileHas():
            return _file_has(outcome.work_dir, check)
        case Command():
            return _command(outcome.work_dir, check)
        case ToolCalled():
            called = _called(check.tool_called, outcome.tools)
            return called, "" if called else f"tools called: {', '.join(outcome.tools) or 'none'}"
        case ToolNotCalled():
            called = _called(check.tool_not_called, outcome.tools)
            return not called, "it was called" if called else ""
        case MaxCalls():
            ok = outcome.calls <= check.max_calls
            return ok, "" if ok else f"{outcome.calls} model calls"
        case MaxCost():
            ok = outcome.cost <= check.max_cost
            return ok, "" if ok else f"cost {outcome.cost:.6f} USD"
        case Judge():
            return grade(check.judge, answer)
    raise AssertionError(f"no judging for {type(check).__name__}")


def _called(name: str, tools: list[str]) -> bool:
    """`text_editor` matches `text_editor:write`; `text_editor:write` only itself."""
    return any(tool == name or tool.split(":")[0] == name for tool in tools)


def _file_has(work_dir: Path, check: FileHas) -> tuple[bool, str]:
    # The agents under evaluation wrote the folder: a link they left must not lead the
    # check (run here, outside any sandbox) to a file of the machine, nor its words into
    # the report.
    try:
        path = resolve_inside(check.file, work_dir)
        if not path.is_file():
            return False, "no such file in the work folder"
        if check.contains is None:
            return True, ""
        data = read_inside(path, [work_dir], FILE_READ_LIMIT)
    except PathRefused as exc:
        return False, f"not read: {exc}"
    text = data.decode("utf-8", errors="replace")
    found = check.contains in text
    return found, "" if found else f"the file holds: {text[:OUTPUT_KEPT]!r}"


def _command(work_dir: Path, check: Command) -> tuple[bool, str]:
    # A session of its own: at the end (or the time limit) its whole process group is
    # stopped, not the shell alone, so nothing it started stays running on this machine.
    with subprocess.Popen(
        check.command, shell=True, cwd=work_dir, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, start_new_session=True,
    ) as process:  # fmt: skip
        try:
            stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            return False, f"still running after {COMMAND_TIMEOUT:g} s: stopped"
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if hasattr(os, "killpg"):
                    os.killpg(process.pid, signal.SIGKILL)
                else:  # Windows: no process group to stop, the shell at least
                    process.kill()
    if process.returncode == check.exit_code:
        return True, ""
    said = (stdout + stderr).strip()[-OUTPUT_KEPT:]
    return False, f"exit code {process.returncode}" + (f": {said}" if said else "")


def verdict(text: str) -> tuple[bool, str]:
    """The judge's reply read: a JSON object {"pass": bool, "reason": "..."} (found among
    other text), else a reply that begins with PASS or FAIL; anything else fails, saying so."""
    for found in re.finditer(r"\{[^{}]*\}", text):
        try:
            data = json.loads(found.group(0))
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("pass"), bool):
            return data["pass"], str(data.get("reason", "")).strip()
    word = re.match(r"\W*(PASS|FAIL)\b[\s:.-]*(.*)", text.strip(), re.IGNORECASE | re.DOTALL)
    if word:
        return word.group(1).upper() == "PASS", word.group(2).strip()
    return False, f"the judge's reply was not a verdict: {text.strip()[:OUTPUT_KEPT]!r}"
