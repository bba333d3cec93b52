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
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                type_only.update(id(n) for n in ast.walk(child))
    found = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_helpers_never_import_upper_layers():
    wrong = [
        f"{path.relative_to(BASE_DIR)}:{line} imports {module}"
        for path in sorted((BASE_DIR / "helpers").rglob("*.py"))
        for line, module in runtime_imports(path)
        if module.split(".")[0] in UPPER
    ]
    assert wrong == []


def test_tools_never_import_the_server_or_entry_point():
    wrong = [
        f"{path.relative_to(BASE_DIR)}:{line} imports {module}"
        for path in sorted((BASE_DIR / "tools").rglob("*.py"))
        for line, module in runtime_imports(path)
        if module.split(".")[0] in {"run_ui", "initialize"}
    ]
    assert wrong == []


def test_the_checker_sees_a_wrong_arrow(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from agent import Agent\n"
        "def f():\n    import agent\n"
    )
    assert [m for _, m in runtime_imports(bad)] == ["typing", "agent"]
