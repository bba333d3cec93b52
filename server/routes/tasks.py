"""The scheduler's routes: list, create, change, delete and run tasks.

The same routes serve two callers: other programs under `/api/v1/tasks`, with the
external API's key (server/apis/native.py), and the Scheduler panel under `/api/tasks`,
with the page's login and CSRF token (server/security/guard.py).
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from scheduler.service import Scheduler, TaskRunning
from scheduler.tasks import TaskPatch, TaskSpec
from server.apis.native import check_key
from server.routes.routing import body, error

task_api = Blueprint("task_api", __name__, url_prefix="/api/v1/tasks")
task_api.before_request(check_key)
task_pages = Blueprint("task_pages", __name__, url_prefix="/api/tasks")


def scheduler() -> Scheduler:
    found: Scheduler = current_app.extensions["cadre.scheduler"]
    return found


def listing() -> Response:
    return jsonify({"tasks": [scheduler().view(task) for task in scheduler().store.all()]})


def create() -> tuple[Response, int]:
    task = scheduler().create(body(TaskSpec))
    return jsonify(scheduler().view(task)), 201


def show(task_id: str) -> Response:
    return jsonify(scheduler().view(scheduler().store.get(task_id)))


def change(task_id: str) -> Response:
    return jsonify(scheduler().view(scheduler().update(task_id, body(TaskPatch))))


def delete(task_id: str) -> Response:
    scheduler().delete(task_id)
    return jsonify({"deleted": task_id})


def run(task_id: str) -> tuple[Response, int]:
    """Start a run now (202: it goes on; its answer becomes the task's `last_result`)."""
    try:
        task = scheduler().run_now(task_id)
    except TaskRunning as exc:
        return error(str(exc), 409)
    return jsonify(scheduler().view(task)), 202


for _blueprint in (task_api, task_pages):
    _blueprint.add_url_rule("", view_func=listing, methods=["GET"])
    _blueprint.add_url_rule("", view_func=create, methods=["POST"])
    _blueprint.add_url_rule("/<task_id>", view_func=show, methods=["GET"])
    _blueprint.add_url_rule("/<task_id>", view_func=change, methods=["PATCH"])
    _blueprint.add_url_rule("/<task_id>", view_func=delete, methods=["DELETE"])
    _blueprint.add_url_rule("/<task_id>/run", view_func=run, methods=["POST"])
