"""Agent Zero 1.x's `helpers.*` names, given only to the Agent Zero code Cadre loads.

From version 1.0 Agent Zero's tools and extensions import `from helpers.tool import Tool,
Response`. Cadre has a `helpers` package of its own, which must stay what it is for every
other module, so no finder on `sys.meta_path` can answer these names (that would change
them for the whole process). Instead a module loaded from a profile's, a plugin's or
`usr/`'s tools or extensions gets its own `__builtins__` whose `__import__` answers
`helpers` and `helpers.*` (absolute imports only) from `OFFERED`, and refuses any other
`helpers.*` name with the same "not part of Cadre" error as the older layout's
(core/tooling/agent_zero/imports.py). Every other import goes to Python's own.

Why this is safe with threads: nothing global changes. `sys.modules` never holds the
stand-in package; the stand-in modules are Cadre's modules under their own names; each
loaded module gets its own copy of the builtins (one file writing to its `__builtins__`
changes no other). Two files importing at once share nothing that is written; Cadre's
`helpers.*` modules are the same objects before and after. Functions of the loaded
module keep the builtins of the globals they were defined in, so an import inside
`execute()` is answered the same way. What the hook does not see:
`importlib.import_module("helpers.x")` (a plain Cadre import, by design).
"""

from __future__ import annotations

import ast
import builtins
import importlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from helpers.files import base_path

#: Agent Zero 1.x's module → Cadre's stand-in, and what it offers (for the error text).
OFFERED: dict[str, tuple[str, str]] = {
    "helpers.tool": ("core.tooling.agent_zero.tool", "Tool, Response"),
    "helpers.errors": (
        "core.tooling.agent_zero.errors",
        "RepairableException, handle_error, error_text, format_error",
    ),
    "helpers.print_style": ("core.tooling.agent_zero.print_style", "PrintStyle"),
    "helpers.extension": ("core.tooling.agent_zero.extension", "Extension"),
}
PACKAGE = "helpers"
_real_import = builtins.__import__


def offered_text() -> str:
    """'helpers.tool (Tool, Response), ...': what Agent Zero 1.x code may import."""
    return ", ".join(f"{name} ({names})" for name, (_, names) in OFFERED.items())


def not_offered(name: str) -> ModuleNotFoundError:
    """The error for an Agent Zero module Cadre has no stand-in for (the model reads it)."""
    return ModuleNotFoundError(
        f"Agent Zero's module {name!r} is not part of Cadre; Agent Zero code may import "
        f"{offered_text()}",
        name=name,
    )


class _StandInPackage(ModuleType):
    """`helpers` as Agent Zero code sees it: the offered modules, nothing else."""

    def __getattr__(self, attribute: str) -> ModuleType:
        full = f"{PACKAGE}.{attribute}"
        if full in OFFERED:
            return importlib.import_module(OFFERED[full][0])
        if attribute.startswith("__"):  # copy, pickle and friends probe dunders
            raise AttributeError(attribute)
        raise not_offered(full)


_PACKAGE = _StandInPackage(PACKAGE, "Agent Zero's helpers, as far as Cadre offers them.")
_PACKAGE.__path__ = []


def _import(
    name: str,
    globals: Mapping[str, Any] | None = None,  # noqa: A002 - __import__'s own names
    locals: Mapping[str, Any] | None = None,  # noqa: A002
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    """`__import__` for Agent Zero code: `helpers.*` from `OFFERED`, the rest as usual."""
    if level != 0 or (name != PACKAGE and not name.startswith(PACKAGE + ".")):
        return _real_import(name, globals, locals, fromlist or (), level)
    if name == PACKAGE:
        for item in fromlist or ():
            if item != "*" and f"{PACKAGE}.{item}" not in OFFERED:
                raise not_offered(f"{PACKAGE}.{item}")
        return _PACKAGE
    if name not in OFFERED:
        raise not_offered(name)
    module = importlib.import_module(OFFERED[name][0])
    return module if fromlist else _PACKAGE


#: The builtins Agent Zero code runs with: Python's, but for `__import__` (each module
#: is given a copy).
BUILTINS: dict[str, Any] = {**vars(builtins), "__import__": _import}


def give_stand_ins(module: ModuleType) -> None:
    """Make `module` (not executed yet) import `helpers.*` from the stand-ins."""
    module.__dict__["__builtins__"] = dict(BUILTINS)


def is_agent_zero_code(path: Path, source: str) -> bool:
    """Whether a tool file outside Cadre's own `tools/` is Agent Zero 1.x code: it imports a
    `helpers` module that Cadre's `helpers` package does not have (`helpers.tool`, say).
    A tool written for Cadre (`from core.tool import Tool`) keeps Cadre's `helpers`."""
    if path.parent == base_path("tools"):
        return False
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError:
        return False  # importing it reports the error in the usual words
    return any(not _cadre_has(name) for name in _helpers_imports(tree))


def _helpers_imports(tree: ast.AST) -> list[str]:
    """The `helpers` submodule names a module imports ('tool' for `helpers.tool`)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name.split(".")[1] for a in node.names if a.name.startswith("helpers.")]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == PACKAGE:
                found += [alias.name for alias in node.names if alias.name != "*"]
            elif node.module.startswith(PACKAGE + "."):
                found.append(node.module.split(".")[1])
    return found


@lru_cache(maxsize=256)
def _cadre_has(name: str) -> bool:
    folder = base_path(PACKAGE)
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()
