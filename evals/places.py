"""Where suites and results live.

Suites: the ones Cadre ships (`evals/suites/`, read-only) and the admin's own
(`usr/evals/*.yaml`, backed up with usr/); a name found in both is the admin's. Results:
`usr/evals/results/<suite>-<time>.json`, each with its HTML report beside it (`.html`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.files import BASE_DIR, usr_dir

SHIPPED = BASE_DIR / "evals" / "suites"
SUFFIXES = (".yaml", ".yml")


def own_suites() -> Path:
    return usr_dir() / "evals"


def results_dir() -> Path:
    return usr_dir() / "evals" / "results"


@dataclass(frozen=True)
class SuiteFile:
    name: str
    path: Path
    shipped: bool


def suites() -> list[SuiteFile]:
    """Every suite by name: the admin's first, then the shipped ones not shadowed."""
    found: dict[str, SuiteFile] = {}
    for folder, shipped in ((own_suites(), False), (SHIPPED, True)):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in SUFFIXES and path.is_file() and path.stem not in found:
                found[path.stem] = SuiteFile(path.stem, path, shipped)
    return list(found.values())


def find_suite(given: str) -> Path | None:
    """A suite given as a path, or by the name of one in `suites()`."""
    path = Path(given).expanduser()
    if path.is_file():
        return path
    return next((s.path for s in suites() if s.name == given), None)


def result_paths(suite: str, folder: Path | None = None) -> tuple[Path, Path]:
    """A new result's JSON and HTML paths (the time in the name keeps them apart)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", suite).strip("-") or "suite"
    base = (folder or results_dir()) / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    json_path = base.with_suffix(".json")
    number = 1
    while json_path.exists():  # two runs in one second
        number += 1
        json_path = base.with_name(f"{base.name}-{number}.json")
    return json_path, json_path.with_suffix(".html")
