"""A module past 400 lines says at its top why it is one piece (docs/architecture.md,
"Module size"); tests are exempt (a test file grows with the cases of its subject)."""

from __future__ import annotations

import ast

from helpers.files import BASE_DIR

LIMIT = 400
#: What the module docstring of a longer module says (followed by its reason).
REASON = "past 400 lines"
#: Not Cadre's modules: mutants/ is the mutation check's copy, each function there many times.
SKIPPED = {".venv", "usr", "tests", ".git", "node_modules", "mutants"}


def long_modules() -> list[str]:
    found = []
    for path in sorted(BASE_DIR.rglob("*.py")):
        relative = path.relative_to(BASE_DIR)
        if SKIPPED & set(relative.parts):
            continue
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > LIMIT:
            found.append((relative.as_posix(), ast.get_docstring(ast.parse(text)) or ""))
    return [name for name, doc in found if REASON not in doc]


def test_a_long_module_says_why_it_is_one_piece():
    unexplained = long_modules()
    assert unexplained == [], (
        f"past {LIMIT} lines without a reason at the top ('Why one module {REASON}: ...'): "
        "split them by job, or say why they are one piece"
    )
