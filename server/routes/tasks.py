"""The scheduler's routes: list, create, change, delete and run tasks.

The same routes serve two callers: other programs under `/api/v1/tasks`, with the
external API's key (server/apis/native.py), and the Scheduler panel under `/api/tasks`,
with the page's login and CSRF token (server/security/guard.py). Each acts as the user
asking (the page's login, or the key's owner): they see and touch only their own tasks,
another's task id is a 404 as one that does not exist, and a task made is theirs.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from scheduler.service import Scheduler, TaskRunning
from scheduler.tasks import TaskPatch, TaskSpec
from server.apis.native import check_key
from server.routes.routing import body, error
from server.security import identity

task_api = Blueprint("task_api", __name__, url_prefix="/api/v1/tasks")
task_api.before_request(check_key)
task_pages = Blueprint("task_pages", __name__, url_prefix="/api/tasks")


def scheduler() -> Scheduler:
    found: Scheduler = current_app.extensions["cadre.scheduler"]
    return found


def listing() -> Response:
    tasks = scheduler().tasks(identity.viewer())
    return jsonify({"tasks": [scheduler().view(task) for task in tasks]})


def create() -> tuple[Response, int]:
    task = scheduler().create(body(TaskSpec), owner=identity.viewer())
    return jsonify(scheduler().view(task)), 201


def show(task_id: str) -> Response:
    return jsonify(scheduler().view(scheduler().task(task_id, identity.viewer())))


def change(task_id: str) -> Response:
    changed = scheduler().update(task_id, body(TaskPatch), identity.viewer())
    return jsonify(scheduler().view(changed))


def delete(task_id: str) -> Response:
    scheduler().delete(task_id, identity.viewer())
    return jsonify({"deleted": task_id})


def run(task_id: str) -> tuple[Response, int]:
    """Start a run now (202: it goes on; its answer becomes the task's `last_result`)."""
    try:
        task = scheduler().run_now(task_id, identity.viewer())
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
