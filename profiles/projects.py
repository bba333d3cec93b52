"""Projects: a named folder under `<space>/projects/` that a chat can belong to.

Each person's projects are in their space (accounts/spaces.py: usr/ for the desktop
mode and the first admin, usr/users/<name>/ for anyone else), so two people may each
have a project of one name: a project is found by its place (`ProjectRef`: its name
and its space); a bare name is one of usr/projects/ (the desktop mode's, the first
admin's, as before accounts). A chat's project is its owner's (`Chat.project_ref`); a
chat outside a project of someone whose space is not usr/ has a ProjectRef without a name,
its owner's space alone (`place_of`), where their own profiles and skills are found.

`<space>/projects/<name>/settings.json` says what the project is and how its chats
work: a description, instructions added to every agent's prompt there, its
memory area (empty: its own, named after it), its work folder (empty: its own
`<space>/projects/<name>/work/`; else an existing folder an admin named, checked
in profiles/project_store.py), Agent 0's profile in its new chats, the
profiles it disables (`{"disabled_agents": ["developer"]}`) and who may call
whom there (`{"subordinates": {"agent0": ["researcher"]}}`: an agent of
profile `agent0` may call only `researcher` in this project, whatever its
agent.yaml allows), and tool rules stricter than the settings' (`{"tool_rules":
[{"tool": "browser", "rule": "ask"}]}`: ask or deny, never allow). It may bring its own
agent profiles (`<space>/projects/<name>/agents/`), knowledge files (`knowledge/`) and secrets
(`secrets.json`, apart, so that a backup can leave them out).

A chat's agents get the project through their configuration
(`project_overrides`): work folder, memory area and secrets are settings
every tool already reads.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helpers import file_snapshot, names
from helpers.files import usr_dir
from helpers.tool_rules import ToolRule
from profiles.bounded_load import load_json, read_limited
from profiles.work_folder import WORK

log = logging.getLogger(__name__)

_AREA = re.compile(r"^[A-Za-z0-9_-]*$")
SETTINGS_FILE = "settings.json"
SECRETS_FILE = "secrets.json"
#: The project's own work folder (when it names none) is `WORK` (profiles/work_folder.py);
#: its knowledge folder is helpers/folders.py's `knowledge_dir(name)`.


class ProjectSettings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    description: str = Field("", max_length=2_000)
    #: Added to the system prompt of every agent of the project's chats.
    instructions: str = Field("", max_length=20_000)
    #: The memory area of its chats; empty: the project's own (its name).
    memory_area: str = Field("", max_length=64)
    #: An existing folder (absolute) its agents work in; empty: usr/projects/<name>/work.
    work_dir: str = Field("", max_length=4_096)
    #: Agent 0's profile in the project's new chats; empty: the `agent_profile` setting.
    agent_profile: str = Field("", max_length=64)
    disabled_agents: list[str] = []
    #: Profile → the profiles its agents may call in this project (narrows agent.yaml's list).
    subordinates: dict[str, list[str]] = {}
    #: Tool rules of the project's chats (helpers/tool_rules.py), stricter only: `ask` or
    #: `deny`, over what the settings' rules decide (core/tooling/approval_gate.py). A project
    #: may ask for more answers than the settings do, never fewer: an `allow` is left out.
    tool_rules: list[ToolRule] = []

    @field_validator("agent_profile")
    @classmethod
    def _profile_name(cls, name: str) -> str:
        if name and not names.is_plain_name(name):
            raise ValueError(f"not a profile name: {names.RULE}")
        return name

    @field_validator("tool_rules")
    @classmethod
    def _stricter_only(cls, rules: list[ToolRule]) -> list[ToolRule]:
        loose = [rule.tool for rule in rules if rule.rule == "allow"]
        if loose:
            log.warning("a project's tool rules may ask or deny, never allow: %s left out",
                        ", ".join(loose))  # fmt: skip
        return [rule for rule in rules if rule.rule != "allow"]

    @field_validator("memory_area")
    @classmethod
    def _area_name(cls, value: str) -> str:
        if not _AREA.match(value):
            raise ValueError("use letters, digits, '-' and '_' (empty: the project's own)")
        return value


#: Project settings read, by file, with the stamp the file had.
_read: dict[Path, tuple[file_snapshot.FileStamp, ProjectSettings]] = {}


@dataclass(frozen=True)
class ProjectRef:
    """A project where it lives: its name and the space whose projects/ folder holds it
    (accounts/spaces.py). Two people's projects of one name are two ProjectRefs.

    Without a name it is no project, only the space: where a chat outside a project of
    someone whose space is not usr/ finds its owner's own profiles and skills
    (`place_of`). It is false then, so that `if project:` keeps meaning "a project"."""

    name: str
    space: Path

    def __bool__(self) -> bool:
        return bool(self.name)


#: A project as the functions here are given one: where it lives, or a bare name (one of
#: usr/projects/: the desktop mode's and the first admin's).
ProjectLike = ProjectRef | str


def place_of(project: str | None, space: Path) -> ProjectRef | None:
    """Where a chat of the owner of `space` finds its project, profiles and skills: its
    `project` there; outside one, `space` alone (a ProjectRef without a name) when it is a
    person's own, so that their own agents/ and skills/ are found; None for usr/ outside a
    project (the desktop mode's, the first admin's: the shared folders are theirs)."""
    if project:
        return ProjectRef(project, space)
    return ProjectRef("", space) if space != usr_dir() else None


def own_space(project: ProjectLike | None) -> Path | None:
    """The person's own space `project` is in (None: usr/'s, or no place given): the
    space whose agents/ and skills/ its chats are offered besides the shared ones."""
    if not isinstance(project, ProjectRef) or project.space == usr_dir():
        return None
    return project.space


def placed(project: ProjectLike) -> ProjectRef:
    """`project` where it lives (a bare name: in usr/)."""
    return project if isinstance(project, ProjectRef) else ProjectRef(project, usr_dir())


def project_name(project: ProjectLike) -> str:
    return project.name if isinstance(project, ProjectRef) else project


def check_name(name: str, what: str = "project") -> str:
    """A plain folder name; anything path-like is refused (helpers/names.py)."""
    return names.check_name(name, what)


def projects_dir(space: Path | None = None) -> Path:
    """The folder of the projects of `space`'s owner (None: usr/'s)."""
    return (space if space is not None else usr_dir()) / "projects"


def project_dir(project: ProjectLike) -> Path:
    where = placed(project)
    return projects_dir(where.space) / check_name(where.name)


def project_exists(project: ProjectLike) -> bool:
    return project_dir(project).is_dir()


def load_project_settings(project: ProjectLike | None) -> ProjectSettings:
    """A project's settings (shared: read, never change them); a damaged file is reported
    and ignored (defaults apply). Read again only when the file changes: every agent
    step asks (who may call whom), through the prompt's checks."""
    if not project:
        return ProjectSettings()
    path = project_dir(project) / SETTINGS_FILE
    stamp = file_snapshot.regular_file(path)
    if stamp is None:
        return ProjectSettings()
    cached = _read.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        found = ProjectSettings.model_validate(load_json(read_limited(path), SETTINGS_FILE))
    except (OSError, ValueError, ValidationError) as exc:
        log.error("project settings %s are damaged and ignored: %s", path, exc)
        found = ProjectSettings()
    if file_snapshot.settled(stamp):  # a fresh file's stamp may not show its next edit
        _read[path] = (stamp, found)
    return found


def load_project_secrets(project: ProjectLike | None) -> dict[str, str]:
    """The project's own secrets (NAME → value); a damaged file is reported and ignored."""
    if not project:
        return {}
    path = project_dir(project) / SECRETS_FILE
    try:
        data = load_json(read_limited(path), SECRETS_FILE)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.error("project secrets %s are damaged and ignored: %s", path, exc)
        return {}
    if not isinstance(data, dict):
        log.error("project secrets %s are not an object of names and values: ignored", path)
        return {}
    return {str(k): str(v) for k, v in data.items()}


def work_folder(project: ProjectLike, settings: ProjectSettings | None = None) -> Path:
    """Where the project's agents work: the folder it names, or its own. A named folder
    that is gone (removed since) is reported, and the project's own folder is used; one
    that cannot be a work folder (settings.json edited by hand or restored, a folder
    swapped for a link) is given as it is, and refused with the reason wherever agents
    use it (helpers/folders.py `work_dir`), never replaced without a word."""
    settings = settings or load_project_settings(project)
    if settings.work_dir:
        try:
            named = Path(settings.work_dir).expanduser()
            if named.is_symlink() or named.exists():
                return named
        # A name too long to look at, a `~` of no user: refused where used, with the reason.
        except (OSError, RuntimeError):
            return Path(settings.work_dir)
        log.error("project %s: its work folder %s does not exist; its own is used",
                  project_dir(project), named)  # fmt: skip
    return project_dir(project) / WORK


def project_overrides(project: ProjectLike | None, secrets: dict[str, str]) -> dict[str, Any]:
    """The settings a chat's agents get from its project (none outside one): its work
    folder, memory area and secrets (the project's win over the global `secrets` of the
    same name). A project that is gone (deleted under a loaded chat) gives nothing."""
    if not project or not project_exists(project):
        return {}
    settings = load_project_settings(project)
    return {
        "work_dir": str(work_folder(project, settings)),
        "memory_area": settings.memory_area or project_name(project),
        "secrets": {**secrets, **load_project_secrets(project)},
    }
