"""Creating, changing and deleting projects (the folders profiles/projects.py reads).

Each person's projects are in their space: every function here is given the project
where it lives (`ProjectRef`; a bare name is one of usr/projects/), the listing the
space. A project's work folder is its own (`<space>/projects/<name>/work/`) or an
existing folder an admin names (the web layer lets no member name one), checked by
profiles/work_folder.py for the project's space. Nothing is written for a change
that is refused.

Deleting a project that chats still belong to is refused with their number
(the caller counts them): those chats would lose their instructions, memory
and work folder without a word. Delete the chats first.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helpers.errors import NotFound, UserError
from helpers.files import write_text_atomic
from helpers.folders import knowledge_dir
from profiles.bounded_load import load_json, read_limited
from profiles.projects import (
    SECRETS_FILE,
    SETTINGS_FILE,
    WORK,
    ProjectLike,
    ProjectRef,
    ProjectSettings,
    check_name,
    load_project_secrets,
    load_project_settings,
    placed,
    project_dir,
    project_name,
    projects_dir,
    work_folder,
)
from profiles.work_folder import check_work_folder

log = logging.getLogger(__name__)

#: Longest secret name (a name is what agents write in §§secret(NAME)).
SECRET_NAME_LIMIT = 64


class ProjectInUse(UserError):
    """A project still has chats: not deleted (the web layer answers 409)."""


@dataclass(frozen=True)
class Project:
    """A project as the page and the API see it (secrets by name only)."""

    name: str
    settings: ProjectSettings
    secret_names: list[str]
    work_folder: str
    own_work_folder: bool
    knowledge_folder: str


def describe(project: ProjectLike) -> Project:
    name = project_name(project)
    if not project_dir(project).is_dir():
        raise NotFound(f"no project named {name!r}")
    settings = load_project_settings(project)
    return Project(
        name=name,
        settings=settings,
        secret_names=sorted(load_project_secrets(project)),
        work_folder=str(work_folder(project, settings)),
        own_work_folder=not settings.work_dir,
        knowledge_folder=str(knowledge_dir(name, placed(project).space)),
    )


def list_projects(space: Path | None = None) -> list[Project]:
    """Every project of `space`'s owner (None: usr/'s), by name (a folder whose name is
    not a project name is skipped)."""
    root = projects_dir(space)
    found = []
    for entry in sorted(root.iterdir() if root.is_dir() else []):
        try:
            if entry.is_dir():
                found.append(describe(ProjectRef(check_name(entry.name), root.parent)))
        except UserError:
            continue
    return found


def _checked(data: dict[str, object], space: Path) -> ProjectSettings:
    try:
        settings = ProjectSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None
    if settings.memory_area.startswith("_"):
        # Cadre's own areas (`_knowledge`, `_knowledge-<project>`: the knowledge files'
        # index): the project's memories would go there, unseen and rebuilt away.
        raise UserError(f"memory_area {settings.memory_area!r}: a name starting with '_' is"
                        " Cadre's own; choose another")  # fmt: skip
    return settings.model_copy(update={"work_dir": check_work_folder(settings.work_dir, space)})


def _check_secrets(secrets: dict[str, str | None]) -> None:
    for key in secrets:
        if not key.isidentifier() or len(key) > SECRET_NAME_LIMIT:
            raise UserError(f"secret name {key!r}: use letters, digits and '_'")


def _read_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object of a project's file (none: empty); UserError when it is damaged, so
    that a change never writes over what could not be read."""
    try:
        data = load_json(read_limited(path), path.name)  # bounded: a file from outside
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UserError(f"{what} {path} cannot be read ({exc}): fix or remove it first") from None
    if not isinstance(data, dict):
        raise UserError(f"{what} {path} is not a JSON object: fix or remove it first")
    return data


def _write(
    project: ProjectLike, settings: ProjectSettings, secrets: dict[str, str], kept: dict[str, Any]
) -> None:
    """Write the project's files; `kept`: keys of settings.json Cadre does not know
    (another tool's), written back as they were."""
    folder = project_dir(project)
    data = {**kept, **settings.model_dump()}
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(folder / SETTINGS_FILE, text)
    # Owner-only, as usr/settings.json's secrets: values are never shown again.
    write_text_atomic(folder / SECRETS_FILE, json.dumps(secrets, indent=2) + "\n", mode=0o600)


def create_project(
    project: ProjectLike, data: dict[str, object], secrets: dict[str, str | None] | None = None
) -> Project:
    """A new project with its own folders (work, knowledge); UserError when the name is
    taken (in its space) or anything is invalid (nothing is written then)."""
    folder, name = project_dir(project), project_name(project)
    if folder.exists():
        raise UserError(f"a project named {name!r} exists already")
    settings = _checked(data, placed(project).space)
    _check_secrets(secrets or {})
    folder.mkdir(parents=True)
    try:
        (folder / WORK).mkdir()
        knowledge_dir(name, placed(project).space).mkdir()
        _write(project, settings, {k: v for k, v in (secrets or {}).items() if v is not None}, {})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    log.info("project %s created", folder)
    return describe(project)


def update_project(
    project: ProjectLike, data: dict[str, object], secrets: dict[str, str | None] | None = None
) -> Project:
    """Change the fields given (the others stay); in `secrets` a None value removes one,
    a name not given keeps its value."""
    folder = project_dir(project)
    if not folder.is_dir():
        raise NotFound(f"no project named {project_name(project)!r}")
    current = _read_object(folder / SETTINGS_FILE, "the project's settings")
    settings = _checked({**current, **data}, placed(project).space)
    _check_secrets(secrets or {})
    kept = {
        str(k): str(v)
        for k, v in _read_object(folder / SECRETS_FILE, "the project's secrets").items()
    }
    for key, value in (secrets or {}).items():
        if value is None:
            kept.pop(key, None)
        else:
            kept[key] = value
    unknown = {k: v for k, v in current.items() if k not in ProjectSettings.model_fields}
    _write(project, settings, kept, unknown)
    (folder / WORK).mkdir(exist_ok=True)
    return describe(project)


def delete_project(project: ProjectLike, chats: int) -> None:
    """Delete the project's folder (its own work folder and knowledge with it; a folder
    the user named is left alone). Refused while `chats` chats still belong to it."""
    folder, name = project_dir(project), project_name(project)
    if not folder.is_dir():
        raise NotFound(f"no project named {name!r}")
    if chats:
        raise ProjectInUse(
            f"project {name!r} still has {chats} chat(s): delete them first, "
            "or they would lose its instructions, memory and work folder"
        )
    # Renamed first: a half-deleted project never shows as one.
    doomed = folder.with_name(f".deleting-{name}-{os.getpid()}")
    folder.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)
    log.info("project %s deleted", folder)
