"""Evaluations started from the page: one at a time per server, on a thread of its own, over
the server's chat store; its progress read by polling (`view`), its result saved with its
report in usr/evals/results/ when it ends, as the command line saves one.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evals import places
from evals.html_report import render_html
from evals.results import Run, save_result
from evals.runner import Plan, run_suite

if TYPE_CHECKING:
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Evaluations whose progress is kept to be read (the results stay on disk regardless).
KEPT = 20
State = Literal["running", "done", "stopped", "failed"]


class Busy(Exception):  # noqa: N818 - a refusal, named as the asker meets it
    """Another evaluation runs on this server now."""


@dataclass
class Job:
    """One evaluation from the page: its plan, how far it is, and where its result went."""

    id: str
    plan: Plan
    owner: str | None
    total: int
    state: State = "running"
    runs: list[Run] = field(default_factory=list)
    error: str = ""
    result: str = ""
    started_at: float = field(default_factory=time.time)
    stop: threading.Event = field(default_factory=threading.Event)

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id, "suite": self.plan.suite.name, "profile": self.plan.profile,
            "model": self.plan.model_label, "repeat": self.plan.repeat, "state": self.state,
            "done": len(self.runs), "total": self.total, "error": self.error,
            "result": self.result, "started_at": self.started_at,
            "runs": [{"task": r.task, "attempt": r.attempt, "passed": r.passed,
                      "chat_id": r.chat_id} for r in self.runs],
        }  # fmt: skip


class EvalService:
    """The server's evaluations: start one, read its progress, stop it."""

    def __init__(self, chats: ChatManager, node_id: str = "") -> None:
        self.chats = chats
        #: In a cluster, this node's id, the first part of each evaluation's id: a request
        #: for it that reaches another node is handed here (server/routes/evals.py).
        self.node_id = node_id
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}

    def start(self, plan: Plan, owner: str | None) -> Job:
        """Start `plan` for `owner`; Busy while another evaluation runs."""
        with self._lock:
            running = [j for j in self._jobs.values() if j.state == "running"]
            if running:
                raise Busy(f"the evaluation of {running[0].plan.suite.name!r} runs now: wait "
                           "for it to end, or stop it")  # fmt: skip
            job_id = (
                f"{self.node_id}.{uuid.uuid4().hex[:12]}" if self.node_id else uuid.uuid4().hex[:12]
            )
            job = Job(job_id, plan, owner, len(plan.suite.tasks) * plan.repeat)
            self._jobs[job.id] = job
            for old in list(self._jobs)[:-KEPT]:
                del self._jobs[old]
        threading.Thread(target=self._run, args=(job,), name="cadre-eval", daemon=True).start()
        return job

    def job(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def latest(self) -> Job | None:
        with self._lock:
            return max(self._jobs.values(), key=lambda j: j.started_at, default=None)

    def _run(self, job: Job) -> None:
        def progress(run: Run, done: int, total: int) -> None:
            job.runs.append(run)

        try:
            result = run_suite(self.chats, job.plan, progress, job.stop)
            json_path, html_path = places.result_paths(result.suite)
            save_result(result, json_path)
            html_path.write_text(render_html(result), encoding="utf-8")
            job.result = Path(json_path).name
            job.state = "stopped" if job.stop.is_set() else "done"
        except Exception as exc:  # noqa: BLE001 - told on the page, and in the log
            log.exception("the evaluation of %r failed", job.plan.suite.name)
            job.error = f"the evaluation failed: {type(exc).__name__}: {exc}"
            job.state = "failed"
