"""The import hook that stands Cadre's modules in for Agent Zero's `python.helpers.*`.

Installed once, before the first tool file is imported (core/tooling/tool_loader.py).
It answers only names under `python.`: `python` and `python.helpers` are empty
packages, the modules of `OFFERED` are Cadre's stand-ins (the same module
object under both names), and any other `python.*` name is a
`ModuleNotFoundError` that names it and says what Cadre offers instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

#: Agent Zero's module → Cadre's stand-in, and what it offers (for the error text).
OFFERED: dict[str, tuple[str, str]] = {
    "python.helpers.tool": ("core.tooling.agent_zero.tool", "Tool, Response"),
    "python.helpers.errors": (
        "core.tooling.agent_zero.errors",
        "RepairableException, handle_error, error_text, format_error",
    ),
    "python.helpers.print_style": ("core.tooling.agent_zero.print_style", "PrintStyle"),
    "python.helpers.extension": ("core.tooling.agent_zero.extension", "Extension"),
}
#: Packages that only hold the modules above.
PACKAGES = ("python", "python.helpers")

_install_lock = threading.Lock()


def offered_text() -> str:
    """'python.helpers.tool (Tool, Response), ...': what an Agent Zero tool may import."""
    return ", ".join(f"{name} ({names})" for name, (_, names) in OFFERED.items())


class _StandIn(importlib.abc.Loader):
    """Loads an Agent Zero name as Cadre's module (or an empty package)."""

    def __init__(self, target: str | None) -> None:
        self._target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if self._target is None:
            package = ModuleType(spec.name, "Agent Zero's package, as Cadre offers it.")
            package.__path__ = []  # a package: its modules are found by AgentZeroImports
            return package
        return importlib.import_module(self._target)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the stand-in module is imported already."""


class AgentZeroImports(importlib.abc.MetaPathFinder):
    """Finds `python.*` names for Agent Zero tools (see the module docstring)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _StandIn(None), is_package=True)
        if fullname in OFFERED:
            return importlib.machinery.ModuleSpec(fullname, _StandIn(OFFERED[fullname][0]))
        if fullname.startswith("python."):
            raise ModuleNotFoundError(
                f"Agent Zero's module {fullname!r} is not part of Cadre; an Agent Zero tool "
                f"may import {offered_text()}",
                name=fullname,
            )
        return None


def install() -> None:
    """Put the finder on `sys.meta_path`, once."""
    with _install_lock:
        if not any(isinstance(finder, AgentZeroImports) for finder in sys.meta_path):
            sys.meta_path.append(AgentZeroImports())
