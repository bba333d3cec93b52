"""The skills panel's routes: list the skills, show one, import a zip or a folder, delete one.

Login and CSRF apply as to every route (server/security/guard.py). Listing and
showing take optional `profile` and `project` (the skills an agent of that
profile in that project, the asker's own, has); import and delete work on
`usr/skills/` only.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath
from typing import Any

from flask import Blueprint, Response, jsonify, request

from helpers.errors import NotFound, UserError
from profiles.projects import ProjectRef
from profiles.skill_import import (
    Entry,
    ImportRefused,
    SkillsTaken,
    delete_user_skill,
    import_skills,
    import_zip,
    user_skills,
)
from profiles.skills import Skill, discover_skills, skill_files
from server.routes.projects import asked_project
from server.routes.routing import error

log = logging.getLogger(__name__)

skill_pages = Blueprint("skills", __name__)


def _where() -> tuple[str, ProjectRef | None]:
    """The profile and the asker's project (in their space) the request names."""
    return request.args.get("profile", ""), asked_project(request.args.get("project"))


def _summary(skill: Skill) -> dict[str, Any]:
    head = skill.head
    return {
        "name": skill.name,
        "description": skill.description,
        "source": skill.source,
        "usable": skill.usable,
        "enabled": head.enabled if head else True,
        "problem": skill.problem,
        "warnings": list(head.warnings) if head else [],
        "overrides": list(skill.overrides),
        "license": head.license if head else "",
        "compatibility": head.compatibility if head else "",
        "allowed_tools": list(head.allowed_tools) if head else [],
        "metadata": dict(head.metadata) if head else {},
        # Only a user's own skill is deleted from the panel; others live in Cadre or a profile.
        "deletable": skill.source == "user",
    }


@skill_pages.get("/api/skills")
def listing() -> Response:
    found = discover_skills(*_where())
    return jsonify({
        "skills": [_summary(found[name]) for name in sorted(found)],
        "folder": str(user_skills()),
    })  # fmt: skip


@skill_pages.get("/api/skills/<name>")
def show(name: str) -> Response:
    skill = discover_skills(*_where()).get(name)
    if skill is None:
        raise NotFound(f"no skill {name!r}")
    files, more = skill_files(skill.root)
    return jsonify({
        **_summary(skill),
        "folder": str(skill.root),
        "instructions": skill.head.body if skill.head else "",
        "files": [{"path": f.path, "size": f.size} for f in files],
        "more_files": more,
    })  # fmt: skip


@skill_pages.post("/api/skills/import")
def import_() -> Response | tuple[Response, int]:
    """A zip in the multipart field `archive`, or a folder's files in `files` (each named by
    its path inside the chosen folder); `replace=1` replaces skills of the same name (without
    it, a name already installed is a 409: the page asks, then sends again)."""
    try:
        return _import()
    except SkillsTaken as exc:
        return error(str(exc), 409)
    except ImportRefused as exc:  # a 400 with its reason; the log keeps a line of it too
        log.warning("skill import refused: %s", exc)
        raise


def _import() -> Response:
    replace = request.form.get("replace", "") in ("1", "true", "yes")
    archive = request.files.get("archive")
    if archive is not None and archive.filename:
        fallback = PurePosixPath(archive.filename.replace("\\", "/")).stem
        result = import_zip(archive.stream, replace=replace, fallback=fallback)
    else:
        uploads = [u for u in request.files.getlist("files") if u.filename]
        if not uploads:
            raise UserError(
                "send a zip as multipart field 'archive', or a folder's files as 'files'"
            )
        entries = [Entry(u.filename or "", lambda u=u: u.stream) for u in uploads]
        result = import_skills(entries, replace=replace)
    return jsonify({
        "imported": result.imported, "replaced": result.replaced, "skipped": result.skipped,
    })  # fmt: skip


@skill_pages.post("/api/skills/<name>/delete")
def delete(name: str) -> Response:
    delete_user_skill(name)
    return jsonify({"deleted": name})
