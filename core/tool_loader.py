"""Finding tools by name: the profile's `tools/` first, then the shared one.

Tool names come from model output, so a name is only ever matched against
file names that exist; it is never joined into a path unchecked. Modules are
cached by path and modification time, so a tool edited in `usr/` is reloaded.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType

from core.tool import Tool
from helpers.errors import UserError
from helpers.file_snapshot import folder_names
from profiles.catalog import layered_folders

_TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_cache: dict[Path, tuple[int, type[Tool]]] = {}


def tool_names(profile: str, project: str | None = None) -> list[str]:
    """Every tool available to `profile`, sorted."""
    names: set[str] = set()
    for folder in layered_folders(profile, "tools", project):
        stems = (n[:-3] for n in folder_names(folder) if n.endswith(".py"))
        names.update(s for s in stems if _TOOL_NAME.match(s) and s[0] != "_")
    return sorted(names)


def find_tool_file(profile: str, name: str, project: str | None = None) -> Path | None:
    """The file defining tool `name` for `profile`, or None."""
    if not _TOOL_NAME.match(name):
        return None
    for folder in layered_folders(profile, "tools", project):
        candidate = folder / f"{name}.py"
        if candidate.is_file():
            return candidate
    return None


def cached_tool_class(path: Path) -> type[Tool] | None:
    """The class already loaded from `path`, if the file is unchanged (one stat, no import)."""
    cached = _cache.get(path)
    try:
        return cached[1] if cached and cached[0] == path.stat().st_mtime_ns else None
    except OSError:
        return None


def load_tool_class(path: Path) -> type[Tool]:
    """The `Tool` subclass defined in `path` (cached until the file changes)."""
    cached = cached_tool_class(path)
    if cached is not None:
        return cached
    mtime = path.stat().st_mtime_ns  # before the import: an edit meanwhile reloads next time
    module = _import_file(path)
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
    _cache[path] = (mtime, classes[0])
    return classes[0]


def _import_file(path: Path) -> ModuleType:
    # A unique module name per file keeps a profile's tool from replacing the
    # shared tool of the same name in sys.modules.
    digest = abs(hash(str(path.resolve())))
    module_name = f"cadre_tool_{path.stem}_{digest:x}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot load tool file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise UserError(f"tool file {path} failed to load: {exc}") from exc
    return module
