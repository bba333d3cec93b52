"""Classes defined in Python files a person may edit while Cadre runs, each imported once
per version of its file; so is a failure to import one.

Tools (tool_loader.py) and Agent Zero extensions (agent_zero/extension_files.py) are each
one class in one file. A `ClassFiles` keeps, by path, the class and the file's
modification time when it was imported, or why it could not be: an edited file is imported
again, a broken one costs one import attempt per version of it, not one per step.

A file in a person's own space is never imported (its code would run on the host, which is
the admin's alone: profiles/personal.py); it fails like a file that does not import, with
the reason, and the log says so once per version. Code written for Agent Zero gets its
`helpers.*` stand-ins, for that module alone (agent_zero/scoped_imports.py).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Generic, TypeVar

from core.tooling.agent_zero import imports as agent_zero_imports
from core.tooling.agent_zero import scoped_imports
from helpers.errors import UserError
from helpers.folders import in_personal_space
from profiles.personal import NO_PYTHON

log = logging.getLogger(__name__)

T = TypeVar("T")


def stat_mtime(path: Path) -> int:
    """The file's modification time in nanoseconds (OSError when it is gone)."""
    return path.stat().st_mtime_ns


class ClassFiles(Generic[T]):
    """The class of each file of one kind ("tool", "extension"), loaded once per version.

    `pick(module, path)` finds the class in an imported module (UserError saying why not);
    `stamp(path)` is the file's version (OSError when it is gone); `stand_ins(path)` says
    whether the file is Agent Zero code, to be given the `helpers.*` stand-ins."""

    def __init__(
        self,
        kind: str,
        pick: Callable[[ModuleType, Path], type[T]],
        stand_ins: Callable[[Path], bool],
        stamp: Callable[[Path], int] = stat_mtime,
    ) -> None:
        self.kind = kind
        self._pick = pick
        self._stand_ins = stand_ins
        self._stamp = stamp
        self._loaded: dict[Path, tuple[int, type[T]]] = {}
        #: Why a file failed to load, by path, with the modification time it had then.
        self._failed: dict[Path, tuple[int, str]] = {}

    def cached(self, path: Path) -> type[T] | None:
        """The class already loaded from `path`, if the file is unchanged (no import)."""
        known = self._loaded.get(path)
        try:
            return known[1] if known and known[0] == self._stamp(path) else None
        except OSError:
            return None

    def settled(self, path: Path) -> bool:
        """Whether `path`, as it is now, was imported or failed to (no import)."""
        try:
            stamp = self._stamp(path)
        except OSError:
            return True  # gone: nothing to import (`load` says so)
        return any(
            known is not None and known[0] == stamp
            for known in (self._loaded.get(path), self._failed.get(path))
        )

    def load(self, path: Path) -> type[T]:
        """The class of `path` (UserError saying why not), imported if it changed."""
        cached = self.cached(path)
        if cached is not None:
            return cached
        try:
            stamp = self._stamp(path)  # before the import: an edit meanwhile reloads next time
        except OSError as exc:
            raise UserError(f"{self.kind} file {path} cannot be read: {exc}") from exc
        failed = self._failed.get(path)
        if failed is not None and failed[0] == stamp:
            raise UserError(failed[1])
        try:
            if in_personal_space(path):
                log.warning("%s file %s is not loaded: %s", self.kind, path, NO_PYTHON)
                raise UserError(f"{self.kind} file {path.name} is not run: {NO_PYTHON}")
            found = self._pick(self._import(path), path)
        except UserError as exc:
            self._failed[path] = (stamp, str(exc))
            raise
        self._failed.pop(path, None)
        self._loaded[path] = (stamp, found)
        return found

    def _import(self, path: Path) -> ModuleType:
        # A unique module name per file keeps a profile's tool from replacing the shared
        # tool of the same name in sys.modules.
        digest = abs(hash(str(path.resolve())))
        name = f"cadre_{self.kind}_{path.parent.name}_{path.stem}_{digest:x}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UserError(f"cannot load {self.kind} file {path}")
        module = importlib.util.module_from_spec(spec)
        agent_zero_imports.install()  # code of Agent Zero's older layout: python.helpers.*
        if self._stand_ins(path):
            scoped_imports.give_stand_ins(module)
        sys.modules[name] = module  # dataclasses and pickling look their module up there
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise UserError(
                f"{self.kind} file {path} failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        return module
