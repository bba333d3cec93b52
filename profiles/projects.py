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

from helpers.errors import UserError
from helpers.files import usr_path

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ProjectSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    disabled_agents: list[str] = []
    #: Profile → the profiles its agents may call in this project (narrows agent.yaml's list).
    subordinates: dict[str, list[str]] = {}


def check_name(name: str, what: str = "project") -> str:
    """A plain folder name; anything path-like is refused."""
    if not _NAME.match(name) or ".." in name:
        raise UserError(f"invalid {what} name {name!r}: use letters, digits, '-', '_', '.'")
    return name


def project_dir(name: str) -> Path:
    return usr_path("projects", check_name(name))


def load_project_settings(name: str | None) -> ProjectSettings:
    """A project's settings; a damaged file is reported and ignored (defaults apply)."""
    if not name:
        return ProjectSettings()
    path = project_dir(name) / "settings.json"
    if not path.exists():
        return ProjectSettings()
    try:
        return ProjectSettings.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        log.error("project settings %s are damaged and ignored: %s", path, exc)
        return ProjectSettings()
