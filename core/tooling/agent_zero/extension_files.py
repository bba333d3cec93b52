"""Agent Zero extensions: where they are found for a point, and their classes loaded.

An extension is a file `<root>/<point>/<name>.py` holding a class derived from
`helpers.extension.Extension` (core/tooling/agent_zero/extension.py). The roots come from
`SOURCES`, most specific first: the profile's `extensions/` (each source of the profile,
as its tools are layered: profiles/catalog.py), then those of the plugins switched on for
it (profiles/plugins.py), then `usr/extensions/`. A root may hold
a point's folder directly (`usr/extensions/<point>/`, Cadre's layout) or under `python/`
(`usr/extensions/python/<point>/`, as Agent Zero 1.x keeps them). As in Agent Zero, a file
name met again in a less specific root is overridden by the first, and the files run in
file-name order whatever their root.

A file is imported once per version, as tools are (core/tooling/class_files.py), with Agent Zero's `helpers.*` stand-ins for it alone
(scoped_imports.py). A file in a person's own space is never imported (its code would
run on the host: profiles/personal.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from core.tooling.agent_zero.extension import Extension
from core.tooling.class_files import ClassFiles
from helpers.errors import UserError
from helpers.file_snapshot import Answers, folder_names
from helpers.files import usr_path
from helpers.shared_files import stamp_at
from profiles.catalog import layered_folders
from profiles.plugin_switches import switches_file
from profiles.plugins import discover_plugins, plugin_folders
from profiles.projects import ProjectLike

#: A source of extension roots for an agent's profile and project, most specific first;
#: each root holds `<point>/` folders.
Source = Callable[[str, ProjectLike | None], list[Path]]


def _profile_roots(profile: str, project: ProjectLike | None) -> list[Path]:
    # The last folder layered_folders gives is Cadre's shared one: it has no extensions.
    return layered_folders(profile, "extensions", project)[:-1] if profile else []


def _plugin_roots(profile: str, project: ProjectLike | None) -> list[Path]:
    # The plugins switched on for this profile and project (an Agent Zero plugin keeps its
    # extensions in `extensions/python/<point>/`, read as any root's).
    return [folder for _, folder in plugin_folders("extensions", profile, project)]


def _user_roots(profile: str, project: ProjectLike | None) -> list[Path]:
    return [usr_path("extensions")]


#: Where extensions are found, most specific first: the profile's, the plugins' switched
#: on, usr/'s.
SOURCES: list[Source] = [_profile_roots, _plugin_roots, _user_roots]

#: The files of each point, profile and project, reused while the folders they were found
#: in and the plugins' switches are unchanged: the loop asks at each of its seams, every
#: step (a dozen listings a point otherwise: 0.4 ms a step in `python -m bench steps`).
_found: Answers[list[Path]] = Answers(64)


def extension_files(point: str, profile: str, project: ProjectLike | None) -> list[Path]:
    """The files of `point` for an agent of `profile` in `project`, in the order they run."""
    # The plugins as discovered now (reread when their folders change) and their switches.
    plugins = tuple((p.root, p.parts) for p in discover_plugins().values())
    key = (point, profile, project, usr_path("extensions"), plugins, stamp_at(switches_file()))
    return list(_found.get(key, lambda: _find_files(point, profile, project)))


def _find_files(point: str, profile: str, project: ProjectLike | None) -> list[Path]:
    found: dict[str, Path] = {}
    for source in SOURCES:
        for root in source(profile, project):
            names = folder_names(root)
            folders = [root / point] if point in names else []
            if "python" in names:
                folders.append(root / "python" / point)
            for folder in folders:
                for name in sorted(folder_names(folder)):
                    if name.endswith(".py") and not name.startswith("__"):
                        found.setdefault(name, folder / name)
    return [found[name] for name in sorted(found)]


def points_with_files(profile: str, project: ProjectLike | None) -> dict[str, list[Path]]:
    """Every point that has extension files for `profile`, with its files (for a status)."""
    points: set[str] = set()
    for source in SOURCES:
        for root in source(profile, project):
            names = folder_names(root)
            points |= {n for n in names if n != "python" and (root / n).is_dir()}
            if "python" in names:
                points |= set(folder_names(root / "python"))
    found = {point: extension_files(point, profile, project) for point in sorted(points)}
    return {point: files for point, files in found.items() if files}


def cached_extension_class(path: Path) -> type[Extension] | None:
    """The class already loaded from `path`, if the file is unchanged (one stat, no import)."""
    return _classes.cached(path)


def load_extension_class(path: Path) -> type[Extension]:
    """The `Extension` subclass of `path` (UserError saying why not; cached per version)."""
    return _classes.load(path)


def _extension_class(module: ModuleType, path: Path) -> type[Extension]:
    # One class per file; with several, the last by name, as Agent Zero picks.
    classes = sorted(
        (obj for obj in vars(module).values()
         if inspect.isclass(obj) and issubclass(obj, Extension) and obj is not Extension
         and obj.__module__ == module.__name__),
        key=lambda cls: cls.__name__,
    )  # fmt: skip
    if not classes:
        raise UserError(
            f"extension file {path} defines no class derived from helpers.extension.Extension"
        )
    return classes[-1]


#: Extensions are Agent Zero code, always: each gets the `helpers.*` stand-ins.
_classes: ClassFiles[Extension] = ClassFiles("extension", _extension_class, lambda _: True)
