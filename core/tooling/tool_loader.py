"""Finding tools by name: the profile's `tools/` first, then the shared one.

Tool names come from model output, so a name is only ever matched against
file names that exist; it is never joined into a path unchecked. Modules are
cached by path and modification time, so a tool edited in `usr/` is reloaded;
so is a failure to load one (`load_problem`), so a broken tool costs one
import attempt per version of its file, not one per step.

A tool written for Agent Zero imports `python.helpers.tool`: the import hook of
core/tooling/agent_zero is installed before the first tool file is imported. One written
for Agent Zero 1.x imports `helpers.tool`: such a file (outside Cadre's own `tools/`) runs
with `__builtins__` that answer `helpers.*` from the stand-ins, for it alone
(core/tooling/agent_zero/scoped_imports.py).

A tool file in a person's own folder (their own profile's, or their project's: helpers/
folders.py `in_personal_space`) is never imported: running it would run their code on the
host, which is the admin's alone (profiles/personal.py). It is a tool that cannot be used,
with the reason, as one that fails to import, and the log says so once per version.
"""

from __future__ import annotations

import inspect
import re
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from core.tool import Tool
from core.tooling.agent_zero import scoped_imports
from core.tooling.class_files import ClassFiles
from helpers import file_snapshot
from helpers.errors import UserError
from helpers.file_snapshot import folder_names
from profiles.catalog import layered_folders
from profiles.plugins import plugin_of
from profiles.projects import ProjectLike

_TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def tool_names(profile: str, project: ProjectLike | None = None) -> list[str]:
    """Every tool available to `profile`, sorted."""
    return sorted(tool_files(profile, project))


def tool_files(profile: str, project: ProjectLike | None = None) -> dict[str, Path]:
    """Every tool of `profile` with the file that defines it (the most specific folder's),
    from one listing of each folder: asked for every tool on every step, it must be cheap."""
    found: dict[str, Path] = {}
    for folder in layered_folders(profile, "tools", project):
        for stem, path in _tools_in(folder, folder_names(folder)):
            found.setdefault(stem, path)
    return found


@lru_cache(maxsize=64)
def _tools_in(folder: Path, names: frozenset[str]) -> tuple[tuple[str, Path], ...]:
    # The same listing gives the same tools: making their paths again cost more than
    # anything else in asking which tools there are.
    return tuple(
        (entry[:-3], folder / entry)
        for entry in sorted(names)
        if entry.endswith(".py") and _TOOL_NAME.match(entry[:-3])
    )


def find_tool_file(profile: str, name: str, project: ProjectLike | None = None) -> Path | None:
    """The file defining tool `name` for `profile`, or None."""
    # The same listing `tool_files` reads (no stat per folder on every call of a tool).
    return tool_files(profile, project).get(name) if _TOOL_NAME.match(name) else None


def _mtime(path: Path) -> int:
    """The file's modification time (OSError when it is gone). Cadre's own tools change
    only with a new version, which means a restart: file_snapshot stats them once, which
    saves two stats per tool a step."""
    found = file_snapshot.stamp_of(str(path))
    if found is None:
        raise FileNotFoundError(path)
    return found[1]


def cached_tool_class(path: Path) -> type[Tool] | None:
    """The class already loaded from `path`, if the file is unchanged (one stat, no import)."""
    return _classes.cached(path)


def load_settled(path: Path) -> bool:
    """Whether `path`, as it is now, was imported or failed to (one stat; no import)."""
    return _classes.settled(path)


def load_tool_class(path: Path) -> type[Tool]:
    """The `Tool` subclass defined in `path` (cached until the file changes)."""
    return _classes.load(path)


def load_problem(path: Path) -> str | None:
    """Why the tool file `path` cannot be used (None: it loads). Imports it if need be."""
    try:
        load_tool_class(path)
    except UserError as exc:
        return str(exc)
    except OSError as exc:  # gone meanwhile
        return f"tool file {path} cannot be read: {exc}"
    return None


def _tool_class(module: ModuleType, path: Path) -> type[Tool]:
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Tool)
        and obj is not Tool
        and obj.__module__ == module.__name__
    ]
    if len(classes) != 1:
        raise UserError(
            f"tool file {path} must define exactly one Tool subclass, found {len(classes)}"
        )
    classes[0].plugin = plugin_of(path)  # its log rows name it (a page part may draw them)
    return classes[0]


def _agent_zero_code(path: Path) -> bool:
    """Whether the tool file is written for Agent Zero 1.x (it gets the stand-ins)."""
    try:
        source = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read tool file {path}: {exc}") from exc
    return scoped_imports.is_agent_zero_code(path, source)


_classes: ClassFiles[Tool] = ClassFiles("tool", _tool_class, _agent_zero_code, _mtime)
