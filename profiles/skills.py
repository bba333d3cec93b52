"""Skills: discovered from folders, merged by name, their files read on demand.

A skill is a folder with a `SKILL.md` (profiles/skill_format.py) and any
files it brings. Sources, later ones overriding earlier ones by name:
shipped `skills/` → `usr/skills/` (the shared ones, the admin's) → `<space>/skills/` (the
chat's owner's own, when their space is not usr/: profiles/projects.py `place_of`) → the
agent's profile's `skills/` (each of its folders, the shipped one first) → the active
project's `skills/` (in its owner's space, profiles/projects.py `ProjectRef`). Cadre
reads a skill's files for agents and runs none of them (an agent runs a skill's script
as any command, in its sandbox). A
folder whose SKILL.md cannot be used is listed with its problem and offered
to no agent; it never stops a run or hides the others.

Every agent's system prompt asks for the list on every step, so the answer
is reused while the folders and files it was read from are unchanged (one
stat each, see helpers/file_snapshot.py), and each SKILL.md is parsed again
only when it changes: a skill dropped into `usr/skills/` is offered from the
next step on, without a restart.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from helpers import file_snapshot
from helpers.confine import PathRefused, read_inside
from helpers.file_snapshot import Answers, FileStamp, named_folders
from helpers.files import base_path, usr_path
from profiles.catalog import profile_roots
from profiles.plugins import plugin_folders
from profiles.projects import ProjectLike, check_name, own_space, project_dir, project_name
from profiles.skill_format import SKILL_FILE, SkillFormatError, SkillHead, parse_skill

log = logging.getLogger(__name__)

#: Where shipped skills live (a module attribute so tests can point elsewhere).
SHIPPED_SKILLS = base_path("skills")
#: Largest SKILL.md read: its instructions go whole into an agent's history.
SKILL_FILE_LIMIT = 256 * 1024


@dataclass(frozen=True)
class Skill:
    """One discovered skill; `problem` says why it cannot be used, if it cannot."""

    name: str
    root: Path
    #: Where it comes from: "shipped", "user" (usr/skills/, shared), "own" (the owner's own
    #: space's), "profile:<name>" or "project:<name>".
    source: str
    head: SkillHead | None = None
    problem: str = ""
    #: The same name in lower sources, overridden by this one (most recent last).
    overrides: tuple[str, ...] = field(default=())

    @property
    def usable(self) -> bool:
        return self.head is not None and self.head.enabled and not self.problem

    @property
    def description(self) -> str:
        return self.head.description if self.head is not None else ""


def skill_sources(profile: str = "", project: ProjectLike | None = None) -> list[tuple[str, Path]]:
    """(label, skills folder) of every source for an agent, lowest precedence first."""
    sources = [("shipped", SHIPPED_SKILLS)]
    sources += [(f"plugin:{name}", folder) for name, folder in plugin_folders("skills", profile,
                                                                              project)]  # fmt: skip
    sources.append(("user", usr_path("skills")))
    space = own_space(project)
    if space is not None:  # the owner's own, found by their agents alone
        sources.append(("own", space / "skills"))
    if profile:
        roots = reversed(profile_roots(profile, project))  # the most specific last
        sources += [(f"profile:{profile}", root / "skills") for root in roots]
    if project:
        sources.append((f"project:{project_name(project)}", project_dir(project) / "skills"))
    return sources


def check_skill_name(name: str) -> str:
    """A skill's folder name is a plain name; anything path-like is refused."""
    return check_name(name, "skill")


class _ParsedSkills:
    """Parsed SKILL.md files by path, reused while the file's stamp is the same."""

    def __init__(self) -> None:
        self._parsed: dict[Path, tuple[FileStamp, SkillHead | str]] = {}
        self._reported: set[tuple[Path, str]] = set()
        self._lock = threading.Lock()

    def read(self, root: Path, stamp: FileStamp) -> SkillHead | str:
        """The skill's head, or the problem that keeps it from being used."""
        path = root / SKILL_FILE
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            found: SkillHead | str = parse_skill(read_skill_file(root), root.name)
        except (SkillFormatError, PathRefused) as exc:
            found = str(exc)
        except Exception:  # one skill's file must never cost the others (or a run) their list
            log.exception("reading %s failed", path)
            found = f"{SKILL_FILE} could not be read (the server's log says why): fix or remove it"
        if file_snapshot.settled(stamp):  # a fresh file's stamp may not show its next edit
            with self._lock:
                self._parsed[path] = (stamp, found)
        if isinstance(found, str):
            self.report_once(root, found)
        return found

    def report_once(self, root: Path, problem: str) -> None:
        """Log an unusable skill once per problem, not on every step."""
        with self._lock:
            if (root, problem) in self._reported:
                return
            self._reported.add((root, problem))
        log.warning("skill at %s is unusable: %s", root, problem)


_parsed = _ParsedSkills()


def read_skill_file(root: Path) -> str:
    """The text of `root`'s SKILL.md (a link leading out of the folder is refused)."""
    try:
        data = read_inside(root / SKILL_FILE, [root], SKILL_FILE_LIMIT)
    except OSError as exc:
        raise SkillFormatError(f"{SKILL_FILE} cannot be read: {exc.strerror or exc}") from None
    if len(data) > SKILL_FILE_LIMIT:
        raise SkillFormatError(
            f"{SKILL_FILE} is larger than {SKILL_FILE_LIMIT // 1024} KB: move the details into"
            " other files of the skill, which agents read when they need them"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillFormatError(f"{SKILL_FILE} is not UTF-8 text") from None


def _load(name: str, root: Path, source: str) -> Skill:
    stamp = file_snapshot.regular_file(root / SKILL_FILE)
    if stamp is None:
        problem = f"no {SKILL_FILE} in the folder"
        _parsed.report_once(root, problem)
        return Skill(name, root, source, problem=problem)
    found = _parsed.read(root, stamp)
    if isinstance(found, str):
        return Skill(name, root, source, problem=found)
    return Skill(name, root, source, head=found)


#: discover_skills' last answers per (profile, project, folders), with what each was read from
#: (at most 32: profile and project names come from outside, the cache stays bounded).
_discovered: Answers[dict[str, Skill]] = Answers(32)


def discover_skills(profile: str = "", project: ProjectLike | None = None) -> dict[str, Skill]:
    """Every skill an agent of `profile` in `project` has, by name, unusable ones included."""
    plugins = tuple(plugin_folders("skills", profile, project))  # switched: part of the key
    key = (profile, project, usr_path("skills"), SHIPPED_SKILLS, plugins)
    return dict(_discovered.get(key, lambda: _discover(profile, project)))


def _discover(profile: str, project: ProjectLike | None) -> dict[str, Skill]:
    found: dict[str, Skill] = {}
    for source, folder in skill_sources(profile, project):
        for name, root in named_folders(folder, check_skill_name, "skill"):
            skill = _load(name, root, source)
            lower = found.get(name)
            if lower is not None:
                skill = replace(skill, overrides=(*lower.overrides, lower.source))
            found[name] = skill
    return found


def usable_skills(profile: str = "", project: ProjectLike | None = None) -> list[Skill]:
    """The skills an agent is offered, sorted by name."""
    return sorted(
        (skill for skill in discover_skills(profile, project).values() if skill.usable),
        key=lambda skill: skill.name,
    )


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its path inside the skill's folder and its size."""

    path: str
    size: int


#: Most files a listing names (a skill with thousands is a data set, not a skill).
FILES_LISTED = 200


def skill_files(root: Path) -> tuple[list[SkillFile], bool]:
    """The skill's files, sorted (hidden ones and links left out), and whether there were more
    than `FILES_LISTED`."""
    found: list[SkillFile] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(folder)
        for name in sorted(files):
            path = base / name
            try:
                info = path.lstat()
            except OSError:  # gone since the folder was listed
                continue
            if name.startswith(".") or not stat.S_ISREG(info.st_mode):
                continue  # links and special files are not the skill's to offer
            found.append(SkillFile(path.relative_to(root).as_posix(), info.st_size))
            if len(found) > FILES_LISTED:
                return found[:FILES_LISTED], True
    return found, False
