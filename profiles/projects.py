"""Projects: a named folder under `usr/projects/` that a chat can belong to.

A project may bring its own agent profiles (`usr/projects/<name>/agents/`)
and settings (`usr/projects/<name>/settings.json`): the profiles it disables
(`{"disabled_agents": ["developer"]}`) and who may call whom there
(`{"subordinates": {"agent0": ["researcher"]}}`: an agent of profile `agent0`
may call only `researcher` in this project, whatever its agent.yaml allows).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from helpers import file_snapshot
from helpers.errors import UserError
from helpers.files import usr_path

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ProjectSettings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    disabled_agents: list[str] = []
    #: Profile → the profiles its agents may call in this project (narrows agent.yaml's list).
    subordinates: dict[str, list[str]] = {}


#: Project settings read, by file, with the stamp the file had.
_read: dict[Path, tuple[file_snapshot.FileStamp, ProjectSettings]] = {}


def check_name(name: str, what: str = "project") -> str:
    """A plain folder name; anything path-like is refused."""
    if not _NAME.match(name) or ".." in name:
        raise UserError(f"invalid {what} name {name!r}: use letters, digits, '-', '_', '.'")
    return name


def project_dir(name: str) -> Path:
    return usr_path("projects", check_name(name))


def load_project_settings(name: str | None) -> ProjectSettings:
    """A project's settings (shared: read, never change them); a damaged file is reported
    and ignored (defaults apply). Read again only when the file changes: every agent
    step asks (who may call whom), through the prompt's checks."""
    if not name:
        return ProjectSettings()
    path = project_dir(name) / "settings.json"
    stamp = file_snapshot.regular_file(path)
    if stamp is None:
        return ProjectSettings()
    cached = _read.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        found = ProjectSettings.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        log.error("project settings %s are damaged and ignored: %s", path, exc)
        found = ProjectSettings()
    if file_snapshot.settled(stamp):  # a fresh file's stamp may not show its next edit
        _read[path] = (stamp, found)
    return found
