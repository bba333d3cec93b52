"""No route picks a reply's status by reading an error's words: a reworded message must
not turn a 404 into a 400. The status follows the error's type (server/routes/routing.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.files import BASE_DIR

#: What reads a text: a method of str that looks at its words, or `in`.
TEXT_TESTS = {"startswith", "endswith", "find", "index", "count", "__contains__"}


def _is_error_text(node: ast.AST, errors: set[str]) -> bool:
    """`str(exc)` or `exc.args[...]` for a name bound by `except ... as exc`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return any(isinstance(a, ast.Name) and a.id in errors for a in node.args)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        value = node.value.value
        return node.value.attr == "args" and isinstance(value, ast.Name) and value.id in errors
    return False


def reads_of_error_text(path: Path) -> list[str]:
    """Where `path` tests the words of an error it caught."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    errors: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.name:
            errors.add(node.name)
        elif isinstance(node, ast.FunctionDef):  # an error handler's parameter
            errors |= {a.arg for a in node.args.args if a.arg in ("exc", "error", "e")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in TEXT_TESTS and _is_error_text(node.func.value, errors):
                found.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_error_text(side, errors) for side in sides):
                found.append(f"{path.name}:{node.lineno}")
    return sorted(set(found), key=lambda hit: int(hit.rsplit(":", 1)[1]))


def test_no_route_reads_an_errors_words_to_answer():
    found = [hit for path in sorted((BASE_DIR / "server").rglob("*.py"))
             for hit in reads_of_error_text(path)]  # fmt: skip
    assert found == []


def test_the_check_sees_a_status_picked_by_text(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def handler(exc):\n"
        "    return 404 if str(exc).startswith('no chat') else 400\n"
        "try:\n    pass\nexcept ValueError as problem:\n"
        "    status = 409 if 'running' in str(problem) else 400\n"
        "    other = problem.args[0] == 'x'\n"
    )
    assert reads_of_error_text(probe) == ["probe.py:2", "probe.py:6", "probe.py:7"]
