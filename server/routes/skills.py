"""The skills panel's routes: list the skills, show one, import a zip or a folder, delete one.

Login and CSRF apply as to every route (server/security/guard.py). Listing and
showing take optional `profile` and `project` (the skills an agent of that
profile in that project, the asker's own, has): the shared ones (usr/skills/, the
admin's), the asker's own (`<space>/skills/`, when their space is not usr/) and their
project's. Import and delete work on the asker's skills folder: an admin's is the shared
usr/skills/ (the desktop mode's too), a member's their own `<space>/skills/`; a member
asking to delete a shared skill is refused (403), and another person's is not there
(404).
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath
from typing import Any

from flask import Blueprint, Response, jsonify, request

from helpers.errors import Forbidden, NotFound, UserError
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
from server.security import identity

log = logging.getLogger(__name__)

skill_pages = Blueprint("skills", __name__)


def _where() -> tuple[str, ProjectRef | None]:
    """The profile and the asker's project (in their space) the request names."""
    return request.args.get("profile", ""), asked_project(request.args.get("project"))


def _folder() -> tuple[str, Path]:
    """The asker's skills folder, as the source its skills are listed from: the shared
    usr/skills/ for an admin (and the desktop mode's one person), else their own."""
    if identity.is_admin():
        return "user", user_skills()
    return "own", identity.space() / "skills"


def _summary(skill: Skill, mine: str) -> dict[str, Any]:
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
        # Only a skill of the asker's folder is deleted from the panel; the others are
        # Cadre's, a profile's or a project's, or the shared ones (a member's view).
        "deletable": skill.source == mine,
    }


@skill_pages.get("/api/skills")
def listing() -> Response:
    found = discover_skills(*_where())
    mine, folder = _folder()
    return jsonify({
        "skills": [_summary(found[name], mine) for name in sorted(found)],
        "folder": str(folder),
        # Where an import goes: the shared folder (everyone's agents) or the asker's own.
        "shared": mine == "user",
    })  # fmt: skip


@skill_pages.get("/api/skills/<name>")
def show(name: str) -> Response:
    skill = discover_skills(*_where()).get(name)
    if skill is None:
        raise NotFound(f"no skill {name!r}")
    files, more = skill_files(skill.root)
    return jsonify({
        **_summary(skill, _folder()[0]),
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
    folder = _folder()[1]
    archive = request.files.get("archive")
    if archive is not None and archive.filename:
        fallback = PurePosixPath(archive.filename.replace("\\", "/")).stem
        result = import_zip(archive.stream, replace=replace, fallback=fallback,
                            destination=folder)  # fmt: skip
    else:
        uploads = [u for u in request.files.getlist("files") if u.filename]
        if not uploads:
            raise UserError(
                "send a zip as multipart field 'archive', or a folder's files as 'files'"
            )
        entries = [Entry(u.filename or "", lambda u=u: u.stream) for u in uploads]
        result = import_skills(entries, replace=replace, destination=folder)
    return jsonify({
        "imported": result.imported, "replaced": result.replaced, "skipped": result.skipped,
    })  # fmt: skip


@skill_pages.post("/api/skills/<name>/delete")
def delete(name: str) -> Response:
    mine, folder = _folder()
    try:
        delete_user_skill(name, folder)
    except NotFound:
        if mine != "own":
            raise
        if (user_skills() / name).is_dir():
            log.warning("refused to delete the shared skill %r to %s: only an admin may",
                        name, identity.viewer())  # fmt: skip
            raise Forbidden(
                f"{name!r} is a shared skill, for everyone: only an admin may delete it."
                " You delete only the skills you imported yourself"
            ) from None
        raise NotFound(f"no skill {name!r} of your own to delete") from None
    return jsonify({"deleted": name})
