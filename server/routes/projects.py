"""The project routes: list, show, create, change and delete projects.

The page's (`/api/projects...`: login and CSRF, as every route, server/security/guard.py)
and the external API's (`/api/v1/projects...`, with its key) are the same routes.
Every project is the asker's own, in their space (`identity.space()`): two people may
each have one of a name, and another's is a 404 as one that does not exist. Only an
admin names a folder outside the project for it to work in (`work_dir`): a member's
agents work in their own space. Secrets go in by name and value and come out by name
only. Deleting a project that chats still belong to is refused (409) with their
number: see profiles/project_store.py.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify
from pydantic import Field

from helpers.errors import UserError
from profiles.catalog import get_available_agents_dict
from profiles.project_store import (
    Project,
    ProjectInUse,
    create_project,
    delete_project,
    describe,
    list_projects,
    update_project,
)
from profiles.projects import ProjectRef, check_name, place_of
from server.routes import views
from server.routes.payloads import Payload
from server.routes.routing import body, chats, error
from server.security import identity


class ProjectFields(Payload):
    """What the panel sends; a field left out keeps its value (on a change)."""

    description: str | None = Field(default=None, max_length=2_000)
    instructions: str | None = Field(default=None, max_length=20_000)
    memory_area: str | None = Field(default=None, max_length=64)
    work_dir: str | None = Field(default=None, max_length=4_096)
    agent_profile: str | None = Field(default=None, max_length=64)
    disabled_agents: list[str] | None = Field(default=None, max_length=200)
    #: NAME → value; null removes the secret (a name left out keeps its value).
    secrets: dict[str, str | None] | None = Field(default=None, max_length=200)

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(exclude={"secrets"}).items() if v is not None}


class NewProject(ProjectFields):
    name: str = Field(min_length=1, max_length=64)


def _chat_counts() -> dict[str, int]:
    """How many chats each project has (loaded or not)."""
    call = chats().runtime.call
    counts: dict[str, int] = {}
    for row in chats().summaries(lambda c: call(views.chat_summary, c), identity.viewer()):
        if row.get("project"):
            counts[row["project"]] = counts.get(row["project"], 0) + 1
    return counts


def _view(project: Project, chat_count: int) -> dict[str, Any]:
    return {
        "name": project.name,
        **project.settings.model_dump(),
        "secrets": project.secret_names,
        "work_folder": project.work_folder,
        "own_work_folder": project.own_work_folder,
        "knowledge_folder": project.knowledge_folder,
        "chats": chat_count,
    }


def own_project(name: str) -> ProjectRef:
    """The asker's project `name` (a checked name) where it lives, in their space:
    whatever a request names a project by is looked up there."""
    return ProjectRef(check_name(name), identity.space())


def asked_project(name: str | None) -> ProjectRef | None:
    """Where the asker's agents find profiles and skills: the project a request's
    optional `project` names, in their space; without one, their space alone when it is
    not usr/ (their own profiles and skills: profiles/projects.py `place_of`), else None."""
    return own_project(name) if name else place_of(None, identity.space())


def _check_profile(project: ProjectRef | None, fields: ProjectFields) -> None:
    """Agent 0's profile must be one the project's chats can have (its own ones included)."""
    if fields.agent_profile and fields.agent_profile not in get_available_agents_dict(project):
        raise UserError(f"agent_profile: no available profile {fields.agent_profile!r}")


def _check_folder(fields: ProjectFields) -> None:
    """A folder outside the project to work in is the admin's to name: a member's agents
    work in their own space, where no other person's folders are."""
    if fields.work_dir and not identity.is_admin():
        raise UserError("work_dir: only an admin names a folder for a project to work in;"
                        " leave it empty and the project works in its own folder")  # fmt: skip


def listing() -> Response:
    counts = _chat_counts()
    found = list_projects(identity.space())
    return jsonify({"projects": [_view(p, counts.get(p.name, 0)) for p in found]})


def show(name: str) -> Response:
    return jsonify(_view(describe(own_project(name)), _chat_counts().get(name, 0)))


def create() -> tuple[Response, int]:
    data = body(NewProject)
    place = own_project(data.name.strip())
    _check_profile(None, data)
    _check_folder(data)
    project = create_project(place, data.settings(), data.secrets)
    return jsonify(_view(project, 0)), 201


def change(name: str) -> Response:
    data = body(ProjectFields)
    place = own_project(name)
    _check_profile(place, data)
    _check_folder(data)
    project = update_project(place, data.settings(), data.secrets)
    return jsonify(_view(project, _chat_counts().get(name, 0)))


def remove(name: str) -> Response | tuple[Response, int]:
    place = own_project(name)
    try:
        delete_project(place, _chat_counts().get(name, 0))
    except ProjectInUse as exc:
        return error(str(exc), 409)
    return jsonify({"deleted": name})


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The project routes under `prefix` of `blueprint`: the page's (login and CSRF) and
    the external API's (its key) are the same routes."""
    blueprint.add_url_rule(prefix, "projects", listing, methods=["GET"])
    blueprint.add_url_rule(prefix, "project_create", create, methods=["POST"])
    blueprint.add_url_rule(f"{prefix}/<name>", "project", show, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/<name>", "project_change", change, methods=["PATCH"])
    blueprint.add_url_rule(f"{prefix}/<name>", "project_delete", remove, methods=["DELETE"])


project_pages = Blueprint("projects", __name__)
add_routes(project_pages, "/api/projects")
