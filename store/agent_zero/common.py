"""What every part of `import-agent-zero` shares: the report, and reading the source safely.

The source (an Agent Zero `usr/` folder) is trusted no more than a download: an
entry is taken only under a plain name and never through a link; a file is
copied only where Cadre has none, unless the user said `--overwrite`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: A chat id, profile, plugin or project name taken from the source: plain, not hidden.
PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
#: A part of a path inside a profile or the knowledge: plain, not hidden (`_context.md` is).
PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: Folders of what Python rebuilds by itself: never copied, never reported.
CACHES = {"__pycache__"}
KEEP = "exists in Cadre (--overwrite replaces it)"


@dataclass
class Report:
    """What a migration did, found already done, and left, in the order it went."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: What was in Cadre already, the same: a second run lists everything here.
    same: list[str] = field(default_factory=list)

    def did(self, what: str) -> None:
        self.done.append(what)

    def left(self, what: str, why: str) -> None:
        self.skipped.append(f"{what}: {why}")

    def already(self, what: str) -> None:
        self.same.append(what)

    def text(self) -> str:
        lines = [f"done ({len(self.done)}):", *(f"  {line}" for line in self.done)]
        if self.same:
            lines += [f"already in Cadre, the same ({len(self.same)}):",
                      *(f"  {line}" for line in self.same)]  # fmt: skip
        lines += [f"skipped ({len(self.skipped)}):", *(f"  {line}" for line in self.skipped)]
        if not self.done:
            lines.append("Nothing changed in Cadre.")
        return "\n".join(lines) + "\n"


def readable(path: Path, report: Report) -> bool:
    """Does `path` exist as itself (a link in its place is refused and reported)?"""
    if path.is_symlink():
        report.left(path.name, "a link (refused: it may point anywhere)")
        return False
    return path.exists()


def entries(folder: Path, what: str, report: Report) -> Iterator[Path]:
    """The entries of `folder` that may be taken: plain names, no links."""
    if not readable(folder, report) or not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            report.left(f"{what} {entry.name}", "a link (refused: it may point anywhere)")
        elif not PLAIN.fullmatch(entry.name) or ".." in entry.name:
            report.left(f"{what} {entry.name!r}", "not a plain name (refused)")
        else:
            yield entry


def files_under(
    root: Path, what: str, report: Report, also: frozenset[str] = frozenset(),
    skip: frozenset[str] = frozenset(),
) -> Iterator[Path]:  # fmt: skip
    """Every regular file under `root`, relative to it; links and odd names left. `also`:
    names taken though not plain (a plugin's `.toggle-1`); `skip`: folders passed over
    (the caller says so once)."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (CACHES | skip) & set(relative.parts):
            continue
        if any((not PART.fullmatch(p) and p not in also) or ".." in p for p in relative.parts):
            if path.is_file() or path.is_symlink():
                report.left(f"{what} {relative.as_posix()!r}", "not a plain name (refused)")
        elif path.is_symlink():
            report.left(f"{what} {relative.as_posix()}", "a link (refused)")
        elif path.is_file() and not any(p.is_symlink() for p in path.parents if p != root):
            yield relative


def copy_file(source: Path, target: Path, overwrite: bool) -> bool | None:
    """Copy a file unless the target exists (and `overwrite` is not given): True copied,
    None the same bytes were there already, False a different file kept."""
    if target.exists() and not overwrite:
        return None if target.read_bytes() == source.read_bytes() else False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return True


def copy_folder(
    source: Path, target: Path, what: str, overwrite: bool, report: Report,
    also: frozenset[str] = frozenset(), skip: frozenset[str] = frozenset(), note: str = "",
) -> None:  # fmt: skip
    """Copy `source` into `target` file by file, reporting one line per outcome."""
    counts = {True: 0, None: 0, False: 0}
    for relative in files_under(source, f"{what}:", report, also, skip):
        counts[copy_file(source / relative, target.joinpath(*relative.parts), overwrite)] += 1
    if counts[True]:
        report.did(f"{what}: {counts[True]} file(s) copied{note}")
    if counts[None]:
        report.already(f"{what}: {counts[None]} file(s)")
    if counts[False]:
        report.left(f"{what}: {counts[False]} file(s)", KEEP)
