"""No two test files share a name: without `__init__.py` in their folders pytest imports each
by its bare name, and a second file of the same name stops the whole run's collection
("import file mismatch"), however the files are run alone."""

from __future__ import annotations

from collections import defaultdict

from helpers.files import BASE_DIR


def test_every_test_file_has_a_name_of_its_own():
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted((BASE_DIR / "tests").rglob("test_*.py")):
        found[path.name].append(path.relative_to(BASE_DIR).as_posix())
    assert {name: paths for name, paths in found.items() if len(paths) > 1} == {}
