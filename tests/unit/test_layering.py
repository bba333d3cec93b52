"""Imports point one way: helpers never import agent, tools, initialize or run_ui."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.files import BASE_DIR

UPPER = {"agent", "tools", "initialize", "run_ui"}


def runtime_imports(path: Path) -> list[tuple[int, str]]:
    """Modules imported at run time (imports under `if TYPE_CHECKING:` excluded)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            for child in node.body:
                type_only.update(id(n) for n in ast.walk(child))
    found = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                package = path.parent.relative_to(BASE_DIR).parts
                base = ".".join(package[: len(package) - node.level + 1])
                found.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def test_helpers_never_import_upper_layers():
    """The web layer (server/) sits above agent.py; every helper is below it."""
    wrong = [
        f"{path.relative_to(BASE_DIR)}:{line} imports {module}"
        for path in sorted((BASE_DIR / "helpers").rglob("*.py"))
        for line, module in runtime_imports(path)
        if module.split(".")[0] in UPPER | {"server"}
    ]
    assert wrong == []


def test_tools_never_import_the_server_or_entry_point():
    """Tools sit below the server; they may use agent.py and initialize.py (delegation does)."""
    wrong = [
        f"{path.relative_to(BASE_DIR)}:{line} imports {module}"
        for path in sorted((BASE_DIR / "tools").rglob("*.py"))
        for line, module in runtime_imports(path)
        if module.split(".")[0] in ("run_ui", "server")
    ]
    assert wrong == []


def test_the_checker_sees_a_wrong_arrow():
    bad = BASE_DIR / "helpers" / "_layering_probe.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from agent import Agent\n"
        "if not TYPE_CHECKING:\n    import run_ui\n"
        "def f():\n    import agent\n"
        "from . import errors\n"
    )
    try:
        found = [m for _, m in runtime_imports(bad)]
    finally:
        bad.unlink()
    assert sorted(found) == ["agent", "helpers", "run_ui", "typing"]
