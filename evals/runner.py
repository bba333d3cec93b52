"""Running a suite on a chat store: each task (times `repeat`) in a fresh chat of its owner,
with the profile and model asked for, its files laid in a work folder of its own first, up
to `parallel` runs at once; each run's outcome checked (checks.py).

The same runner serves the command line (cli.py, a chat store of its own in the process)
and the page (service.py, the server's chat store): the chats it makes are ordinary chats,
saved and listed, so a report links each run to its chat.

Each run works in `<space>/workdir/evals/<run id>/<task>-<attempt>`, a folder of the
agents' own (helpers/exposure.py). Where the owner's agents must work in their own work
folder whatever a chat says (anyone but the first admin: core/agent_config.py), the runs
share that folder and go one at a time.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accounts.spaces import space_of
from core.agent_types import UserMessage
from core.events import ToolEnded
from evals.checks import Grader, Outcome, run_checks, verdict
from evals.results import EvalResult, Run
from evals.suite import Suite, Task
from helpers.confine import PathRefused, resolve_inside
from helpers.exposure import WORKDIR

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Longest judge's reply, in tokens (a verdict and a sentence).
JUDGE_MAX_TOKENS = 300
#: Seconds a stopped run gets to unwind before the evaluation goes on without it.
SHUTDOWN_WAIT = 30.0
#: Told each time a run ends: (the run, runs done, runs in all).
Progress = Callable[[Run, int, int], None]


@dataclass
class Plan:
    """What to run: the suite, on which profile and model overrides, how often, how wide."""

    suite: Suite
    profile: str
    #: The chats' setting overrides choosing the model (evals/model_choice.py).
    model_overrides: dict[str, Any] = field(default_factory=dict)
    model_label: str = ""
    repeat: int = 1
    parallel: int = 1
    #: Seconds a run may take before it is stopped and fails.
    timeout: float = 600.0
    owner: str | None = None
    suite_path: str = ""


class Cancelled(Exception):  # noqa: N818 - a request to stop, not a failure
    """The evaluation was stopped before every run began."""


def run_suite(chats: ChatManager, plan: Plan, progress: Progress | None = None,
              stop: threading.Event | None = None) -> EvalResult:  # fmt: skip
    """Run every task of the plan; the result holds the runs in the suite's order. Once
    `stop` is set, the runs going on are stopped and left out with those not begun."""
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:4]
    root = space_of(plan.owner) / WORKDIR / "evals" / run_id
    jobs = [(task, attempt) for task in plan.suite.tasks for attempt in range(1, plan.repeat + 1)]
    folders = _folder_names([task.name for task in plan.suite.tasks])
    result = EvalResult(suite=plan.suite.name, suite_path=plan.suite_path, profile=plan.profile,
                        model=plan.model_label, repeat=plan.repeat, started_at=time.time(),
                        tasks=[t.name for t in plan.suite.tasks])  # fmt: skip
    began = time.perf_counter()
    done: dict[int, Run] = {}
    lock = threading.Lock()
    one_at_a_time = threading.Lock()

    def job(index: int) -> None:
        if stop is not None and stop.is_set():
            return
        task, attempt = jobs[index]
        run = _run_one(chats, plan, task, attempt, root / f"{folders[task.name]}-{attempt}",
                       one_at_a_time, stop)  # fmt: skip
        if run.error == STOPPED:
            return  # cut short by the stop: no outcome to count either way
        with lock:
            done[index] = run
            count = len(done)
        if progress is not None:
            progress(run, count, len(jobs))

    with concurrent.futures.ThreadPoolExecutor(max(1, plan.parallel), "cadre-eval") as pool:
        for future in [pool.submit(job, index) for index in range(len(jobs))]:
            future.result()
    result.runs = [done[index] for index in sorted(done)]
    result.seconds = time.perf_counter() - began
    return result


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:60] or "task"


def _folder_names(names: list[str]) -> dict[str, str]:
    """Each task's folder name: its slug, numbered by the task's place where two tasks'
    names read alike ("report 1", "report/1"), so that no two share a work folder."""
    slugs = {name: _slug(name) for name in names}
    seen = [slug.lower() for slug in slugs.values()]  # one folder on a case-blind disk
    used = {slug for slug in seen if seen.count(slug) == 1}
    folders = {}
    for number, (name, slug) in enumerate(slugs.items(), 1):
        folder = slug
        if seen.count(slug.lower()) > 1:
            folder = f"{slug}.{number}"
            while folder.lower() in used:  # a task that is named so already
                folder += "_"
        used.add(folder.lower())
        folders[name] = folder
    return folders


def _run_one(chats: ChatManager, plan: Plan, task: Task, attempt: int, folder: Path,
             one_at_a_time: threading.Lock, stop: threading.Event | None) -> Run:  # fmt: skip
    overrides = {**plan.model_overrides, "agent_profile": plan.profile, "work_dir": str(folder)}
    folder.mkdir(parents=True, exist_ok=True)
    context = chats.new_chat(None, plan.owner, **overrides)
    # Named for the list at once (no naming call): which evaluation, which task, which run.
    chats.rename(context.id, f"Eval {plan.suite.name}: {task.name} ({attempt})", plan.owner)
    work = Path(context.agent0.ctx.settings.work_dir or folder)
    if work.resolve() != folder.resolve():  # the owner's own folder, whatever a chat says
        with one_at_a_time:
            return _attempt(chats, context, plan, task, attempt, work, stop)
    return _attempt(chats, context, plan, task, attempt, work, stop)


def _attempt(chats: ChatManager, context: Chat, plan: Plan, task: Task, attempt: int,
             work: Path, stop: threading.Event | None) -> Run:  # fmt: skip
    refused = lay_files(work, task.files)
    tools: list[str] = []
    unsubscribe = context.events.subscribe(ToolEnded, lambda event: tools.append(event.tool_name))
    began = time.perf_counter()
    answer, error = "", refused
    try:
        for message in task.messages if not refused else []:
            left = plan.timeout - (time.perf_counter() - began)
            answer, error = _send(context, message, max(left, 0.1), stop)
            if error:
                break
    finally:
        unsubscribe()
    seconds = time.perf_counter() - began
    spent = context.usage  # everything until the answer, utility work (naming, memory) too
    tokens, cost = spent.total_tokens, spent.cost
    with context.log.lock:  # each step of each agent is one `agent` row: one model call
        calls = sum(item.type == "agent" for item in context.log.items)
    outcome = Outcome(answer=answer, work_dir=work, tools=list(tools), calls=calls, cost=cost)
    checks = run_checks(list(task.checks), outcome, _grader(context))
    chats.save_now(context)  # the judge's verdict is in the chat's log too
    passed = not error and all(check.passed for check in checks)
    log.info("evaluation %s: task %r (%d) %s in %.1f s", plan.suite.name, task.name, attempt,
             "passed" if passed else "failed", seconds)  # fmt: skip
    return Run(task=task.name, attempt=attempt, chat_id=context.id, passed=passed, answer=answer,
               error=error, checks=checks, tools=tools, calls=calls, tokens=tokens, cost=cost,
               seconds=seconds)  # fmt: skip


def lay_files(work: Path, files: dict[str, str]) -> str:
    """Write a task's files in its work folder; "" when done, else why one was not. A link
    an earlier chat left in a shared work folder is not written through to elsewhere."""
    for name, content in files.items():
        try:
            path = resolve_inside(name, work)
        except PathRefused as exc:
            return f"the task's file {name} was not laid: {exc}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return ""


#: A run's error when the evaluation's stop cut it short (left out of the result).
STOPPED = "the evaluation was stopped"
#: Seconds between looks at the evaluation's stop while a run goes on.
STOP_LOOK = 0.5


def _send(context: Chat, message: str, timeout: float,
          stop: threading.Event | None = None) -> tuple[str, str]:  # fmt: skip
    """Agent 0's answer to `message`, or why there is none (the run is stopped when it
    takes longer than `timeout`, or when `stop` is set)."""
    run = context.communicate(UserMessage(message))
    assert isinstance(run, concurrent.futures.Future)  # a chat of a chat store: thread-side
    deadline = time.monotonic() + timeout
    try:
        while True:
            if stop is not None and stop.is_set():
                context.stop()
                # Unwound, however it ended. Not `concurrent.futures.wait`: a future the
                # runner cancels (Future.cancel) never wakes its waiters, only `result`.
                with contextlib.suppress(Exception):
                    run.result(SHUTDOWN_WAIT)
                return "", STOPPED
            left = deadline - time.monotonic()
            try:
                return str(run.result(min(left, STOP_LOOK) if stop is not None else left)), ""
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
    except TimeoutError:
        context.stop()
        return "", f"no answer within {timeout:.0f} s: the run was stopped"
    except concurrent.futures.CancelledError:
        return "", "the run was stopped"
    except Exception as exc:  # noqa: BLE001 - a failed run is a failed task, said so
        return "", f"the run failed: {exc}"


def _grader(context: Chat) -> Grader:
    """The judge: the chat's Agent 0 asks the utility model (a `util` row in its log)."""
    agent = context.agent0.ctx

    def grade(rubric: str, answer: str) -> tuple[bool, str]:
        system = agent.read_prompt("fw.eval.judge.md")
        message = agent.read_prompt("fw.eval.judge_task.md", rubric=rubric, answer=answer)
        call = agent.call_utility_model(system, message, heading="Evaluation: the judge's verdict",
                                        max_tokens=JUDGE_MAX_TOKENS)  # fmt: skip
        runtime = context.runtime
        assert runtime is not None
        return verdict(runtime.submit(call).result(300))

    return grade
