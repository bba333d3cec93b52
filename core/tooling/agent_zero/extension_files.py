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

A file is imported once per version, as tools are (core/tooling/class_files.py), with
Agent Zero's `helpers.*` stand-ins for it alone (scoped_imports.py). A file in a person's
own space is never imported (its code would run on the host: profiles/personal.py).
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

#: Every point's files for a profile and project, reused while the folders they were
#: found in and the plugins' switches are unchanged (the loop asks at each of its seams).
_found: Answers[dict[str, tuple[Path, ...]]] = Answers(64)


def extension_map(profile: str, project: ProjectLike | None) -> dict[str, tuple[Path, ...]]:
    """Each point that has extension files for an agent of `profile` in `project`, with its
    files in the order they run (do not change it: it is shared)."""
    # The plugins as discovered now (reread when their folders change) and their switches.
    plugins = tuple((p.root, p.parts) for p in discover_plugins().values())
    key = (profile, project, usr_path("extensions"), plugins, stamp_at(switches_file()))
    return _found.get(key, lambda: _find_all(profile, project))


def extension_files(point: str, profile: str, project: ProjectLike | None) -> list[Path]:
    """The files of `point` for an agent of `profile` in `project`, in the order they run."""
    return list(extension_map(profile, project).get(point, ()))


def _find_all(profile: str, project: ProjectLike | None) -> dict[str, tuple[Path, ...]]:
    found: dict[str, dict[str, Path]] = {}
    for source in SOURCES:
        for root in source(profile, project):
            names = folder_names(root)
            folders = [(n, root / n) for n in sorted(names) if n != "python"]
            if "python" in names:
                folders += [(n, root / "python" / n) for n in sorted(folder_names(root / "python"))]
            for point, folder in folders:
                for name in sorted(folder_names(folder)):  # a file has no names: left out
                    if name.endswith(".py") and not name.startswith("__"):
                        found.setdefault(point, {}).setdefault(name, folder / name)
    return {point: tuple(files[n] for n in sorted(files)) for point, files in sorted(found.items())}


def points_with_files(profile: str, project: ProjectLike | None) -> dict[str, list[Path]]:
    """Every point that has extension files for `profile`, with its files (for a status)."""
    return {point: list(files) for point, files in extension_map(profile, project).items()}


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
