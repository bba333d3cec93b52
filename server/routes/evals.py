"""Evaluations: the suites there are, running one, its progress, the results and reports.

    GET  /api/evals                      suites, profiles and models to choose from
    POST /api/evals/runs                 {suite, profile, model?, repeat?} -> 202, the run
    GET  /api/evals/runs/<id>            its progress (the page polls it)
    POST /api/evals/runs/<id>/stop       runs not begun are left out
    GET  /api/evals/results              saved results, newest first
    GET  /api/evals/results/<name>       one result (?against=<name>: and the comparison)
    GET  /api/evals/results/<name>/report  its HTML report

The same under `/api/v1/evals` with the external API's key. Admins only, once accounts
exist (server/security/guard.py ADMIN_PATHS, and here for the key's owner): an evaluation
runs the server's suites (whose command checks run on this machine), spends on the
server's models and writes results every admin reads. Its chats are the admin's who
started it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request
from pydantic import BaseModel, ConfigDict, Field

from cluster.node import NodesUnknown
from evals import places
from evals.model_choice import overrides_for
from evals.results import ResultError, compare, load_result
from evals.runner import Plan
from evals.service import Busy, EvalService, Job
from evals.suite import SuiteError, load_suite
from helpers.errors import NotFound, UserError
from helpers.settings import load_settings
from profiles.catalog import get_available_agents_dict
from server.apis.native import check_key
from server.routes.routing import body, chats, error
from server.security import identity
from store import model_choice
from store.placement import ClusterDown, Elsewhere

eval_pages = Blueprint("eval_pages", __name__, url_prefix="/api/evals")
eval_api = Blueprint("eval_api", __name__, url_prefix="/api/v1/evals")
#: Where an app keeps its EvalService (made on first use).
SERVICE = "cadre.evals"
#: Most runs of each task one evaluation from the page may ask for.
MAX_REPEAT = 20
_RESULT_NAME = re.compile(r"^[A-Za-z0-9._-]+\.json$")


@eval_api.before_request
def _key_and_admin() -> tuple[Response, int] | None:
    refused = check_key()
    if refused is not None:
        return refused
    if not identity.is_admin():
        return error("only an admin may run evaluations: ask one of your server's admins", 403)
    return None


class RunBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: str = Field(min_length=1, max_length=200)
    profile: str = Field(min_length=1, max_length=200)
    model: str = Field(default="", max_length=300)
    repeat: int = Field(default=1, ge=1, le=MAX_REPEAT)


def service() -> EvalService:
    found = current_app.extensions.get(SERVICE)
    if found is None:
        here = current_app.extensions.get("cadre.node")
        node_id = here.config.node_id if here is not None and here.clustered else ""
        found = current_app.extensions.setdefault(SERVICE, EvalService(chats(), node_id))
    return found


def _job(job_id: str) -> Job:
    """The evaluation `job_id` of this node; in a cluster, one another node runs is asked of
    that node (its id begins with the node's: the page's polls reach any node)."""
    job = service().job(job_id)
    if job is not None:
        return job
    node_id, dot, _ = job_id.rpartition(".")
    if dot and node_id and node_id != service().node_id and service().node_id:
        try:
            alive = current_app.extensions["cadre.node"].address_of(node_id) is not None
        except NodesUnknown as exc:
            raise ClusterDown(str(exc)) from None
        if alive:
            raise Elsewhere(job_id, node_id)  # relayed there (server/cluster/relay.py)
        raise NotFound(f"no evaluation {job_id!r}: node {node_id}, which ran it, is gone")
    raise NotFound(f"no evaluation {job_id!r} (this server keeps the latest few)")


def _suite_row(suite: places.SuiteFile) -> dict[str, Any]:
    """A suite as the panel lists it; one that cannot be read says why (and cannot run)."""
    row: dict[str, Any] = {"name": suite.name, "shipped": suite.shipped, "problem": "",
                           "description": "", "tasks": 0}  # fmt: skip
    try:
        loaded = load_suite(suite.path)
    except SuiteError as exc:
        return {**row, "problem": str(exc)}
    return {**row, "description": loaded.description, "tasks": len(loaded.tasks)}


def overview() -> Response:
    owner = identity.viewer()
    suites = [_suite_row(suite) for suite in places.suites()]
    latest = service().latest()
    return jsonify({
        "suites": suites, "profiles": sorted(get_available_agents_dict(None)),
        "models": model_choice.choices(owner), "folder": str(places.own_suites()),
        "parallel": load_settings().eval_parallel,
        "latest": latest.view() if latest is not None else None,
    })  # fmt: skip


def start() -> tuple[Response, int]:
    asked = body(RunBody)
    owner = identity.viewer()
    found = next((s.path for s in places.suites() if s.name == asked.suite), None)
    if found is None:
        raise NotFound(f"no suite named {asked.suite!r} in {places.own_suites()}")
    try:
        suite = load_suite(found)
    except SuiteError as exc:
        raise UserError(str(exc)) from exc
    if asked.profile not in get_available_agents_dict(None):
        raise UserError(f"no available profile {asked.profile!r}")
    settings = load_settings()
    plan = Plan(suite=suite, profile=asked.profile,
                model_overrides=overrides_for(asked.model, owner, any_model=False),
                model_label=asked.model.strip(), repeat=asked.repeat,
                parallel=settings.eval_parallel, timeout=settings.eval_task_timeout,
                owner=owner, suite_path=str(found))  # fmt: skip
    try:
        job = service().start(plan, owner)
    except Busy as exc:
        return error(str(exc), 409)
    return jsonify(job.view()), 202


def progress(job_id: str) -> Response:
    return jsonify(_job(job_id).view())


def stop(job_id: str) -> Response:
    job = _job(job_id)
    job.stop.set()
    return jsonify(job.view())


def _summary(path: Path) -> dict[str, Any] | None:
    try:
        result = load_result(path)
    except ResultError:
        return None
    return {"name": path.name, "suite": result.suite, "profile": result.profile,
            "model": result.model, "passed": result.passed, "total": result.total,
            "started_at": result.started_at, "repeat": result.repeat}  # fmt: skip


def results() -> Response:
    folder = places.results_dir()
    paths = sorted(folder.glob("*.json"), key=_modified, reverse=True)
    found = [s for s in map(_summary, paths[:200]) if s is not None]
    return jsonify({"results": found})


def _modified(path: Path) -> float:
    """When the result was written; 0 for one deleted meanwhile (then left out as unreadable)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _result_path(name: str) -> Path:
    path = places.results_dir() / name
    if not _RESULT_NAME.match(name) or not path.is_file():
        raise NotFound(f"no result {name!r}")
    return path


def result(name: str) -> Response:
    try:
        loaded = load_result(_result_path(name))
        against = request.args.get("against", "")
        changes = compare(load_result(_result_path(against)), loaded) if against else None
    except ResultError as exc:
        raise UserError(str(exc)) from exc
    return jsonify({
        "name": name, "result": loaded.model_dump(),
        "tasks": [{**s.model_dump(), "rate": s.rate} for s in loaded.summaries()],
        "passed": loaded.passed, "total": loaded.total,
        "changes": [c.model_dump() for c in changes] if changes is not None else None,
    })  # fmt: skip


#: The report is the model's words too: shown alone, scripts off, links to chats still work.
REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def report(name: str) -> Response:
    path = _result_path(name).with_suffix(".html")
    if not path.is_file():
        raise NotFound(f"no report for {name!r}")
    response = Response(path.read_text(encoding="utf-8"), mimetype="text/html")
    response.headers["Content-Security-Policy"] = REPORT_POLICY
    return response


for _blueprint in (eval_pages, eval_api):
    _blueprint.add_url_rule("", view_func=overview, methods=["GET"])
    _blueprint.add_url_rule("/runs", view_func=start, methods=["POST"])
    _blueprint.add_url_rule("/runs/<job_id>", view_func=progress, methods=["GET"])
    _blueprint.add_url_rule("/runs/<job_id>/stop", view_func=stop, methods=["POST"])
    _blueprint.add_url_rule("/results", view_func=results, methods=["GET"])
    _blueprint.add_url_rule("/results/<name>", view_func=result, methods=["GET"])
    _blueprint.add_url_rule("/results/<name>/report", view_func=report, methods=["GET"])
