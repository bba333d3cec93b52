"""No file of Cadre's keeps a merge's conflict markers: inside a docstring or a text file
nothing else fails on them (browsing/guard.py's docstring held both sides of a merge)."""

from __future__ import annotations

import re
import subprocess

from helpers.files import BASE_DIR

#: The first and last markers as git writes them (seven of a character at a line's start, a
#: space, the side's name); the middle one alone could be a Markdown heading's underline.
MARKER = re.compile(rb"^(?:<{7}|>{7}) ", re.MULTILINE)


def test_no_file_keeps_a_merges_conflict_markers():
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=BASE_DIR, capture_output=True, check=True
    ).stdout.split(b"\0")
    found = []
    for name in filter(None, tracked):
        path = BASE_DIR / name.decode()
        if path.suffix in (".py", ".md", ".js", ".css", ".html", ".toml") and path.is_file():
            found += [f"{name.decode()}:{m.group(0)[:7].decode()}"
                      for m in MARKER.finditer(path.read_bytes())]  # fmt: skip
    assert found == []
