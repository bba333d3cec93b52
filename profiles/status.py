"""A profile's status for the settings page: where each of its files comes from, and
what in its prompts will not render as written.

A profile's files are layered over its sources (shipped `agents/`, plugins,
`usr/agents/`, the project's), the most specific winning file by file: the
list names, for each file, the source it is read from. A prompt file of the
profile that includes a file no layer has renders that include as nothing
(profiles/prompts.py): each such include is a warning here, and so is a prompt's Python
companion in a person's own folder, which is never run (profiles/personal.py). Which of
its tools cannot be used is core's to say (core/tooling/tool_status.py); the web layer
adds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from helpers import file_snapshot
from helpers.errors import PromptError
from helpers.file_snapshot import folder_names
from helpers.folders import in_personal_space
from profiles.catalog import META_FILES, discover_profiles, layered_folders, profile_sources
from profiles.personal import NO_PYTHON
from profiles.projects import ProjectLike
from profiles.prompts import PromptLoader

#: The folders of a profile whose files are listed (besides its agent.yaml and settings.json).
_FOLDERS = ("prompts", "tools")


@dataclass(frozen=True)
class ProfileFile:
    """One file of a profile: its path inside the profile and the source it comes from."""

    path: str
    origin: str


@dataclass(frozen=True)
class ProfileStatus:
    """What the settings page shows of a profile besides its description."""

    files: list[ProfileFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def profile_files(profile: str, project: ProjectLike | None = None) -> list[ProfileFile]:
    """Every file of `profile` across its sources, each from the source that wins it,
    sorted by path. The profile's description comes from one file only (agent.yaml
    before agent.json), from the most specific source that has one."""
    origins: dict[str, str] = {}
    meta: tuple[str, str] | None = None
    for source, folder in profile_sources(project):
        root = folder / profile
        if not file_snapshot.is_folder(root):
            continue
        names = folder_names(root)
        own_meta = next((name for name in META_FILES if name in names), None)
        if own_meta is not None:
            meta = (own_meta, source)
        if "settings.json" in names:
            origins["settings.json"] = source
        for kind in _FOLDERS:
            for name in folder_names(root / kind):
                if not name.startswith((".", "_")) and (root / kind / name).is_file():
                    origins[f"{kind}/{name}"] = source
    if meta is not None:
        origins[meta[0]] = meta[1]
    return [ProfileFile(path, origin) for path, origin in sorted(origins.items())]


def include_warnings(profile: str, project: ProjectLike | None = None) -> list[str]:
    """One line per include, in a prompt file of the profile, of a file no layer has."""
    loader = PromptLoader(layered_folders(profile, "prompts", project))
    warnings = []
    for file in profile_files(profile, project):
        kind, _, name = file.path.partition("/")
        if kind != "prompts" or not name.endswith(".md"):
            continue
        try:
            missing = loader.missing_includes(name)
        except PromptError as exc:  # a file that does not even parse: say so here too
            warnings.append(str(exc))
            continue
        warnings += [
            f"{name} includes {gone}, which no layer has: it renders as nothing" for gone in missing
        ]
    return warnings


def python_left_out(profile: str, project: ProjectLike | None = None) -> list[str]:
    """One line per prompt companion (`prompts/*.py`) of the profile in a person's own
    folder: never run, its prompt renders without it."""
    lines = []
    for folder in _personal_prompts(profile, project):
        for name in sorted(folder_names(folder)):
            if name.endswith(".py") and (folder / name).is_file():
                lines.append(f"prompts/{name} is not run: {NO_PYTHON}")
    return lines


def _personal_prompts(profile: str, project: ProjectLike | None) -> list[Path]:
    return [
        folder / profile / "prompts"
        for _, folder in profile_sources(project)
        if in_personal_space(folder)
    ]


def profile_status(profile: str, project: ProjectLike | None = None) -> ProfileStatus:
    """The files of `profile` with their sources, and its settings' and prompts' warnings."""
    found = discover_profiles(project).get(profile)
    ignored = found.ignored_settings if found is not None else ()
    warnings = [f"settings.json: {name} is not a Cadre setting: ignored" for name in ignored]
    warnings += include_warnings(profile, project) + python_left_out(profile, project)
    return ProfileStatus(profile_files(profile, project), warnings)
