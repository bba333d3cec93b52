"""Reading, writing and patching text files by line numbers, for the `text_editor` tool.

A patch names lines as the agent last saw them, so it is only applied to the
file the agent read: `FileReads` remembers a digest of each file at its last
read or write, and a patch against a file changed since (by a command, the
user, another agent) is refused with a message saying to read it again.
Edits are applied bottom-up, so every edit's numbers refer to the file as read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from helpers.confine import PathRefused, open_inside
from helpers.errors import RepairableTold
from helpers.files import write_text_atomic
from helpers.told import Told, told

#: Largest file read at all; bigger ones are for `head`/`sed` in a terminal.
FILE_LIMIT = 20 * 1024 * 1024
#: Most characters one read shows; the rest is read by line range.
SHOW_LIMIT = 40_000
#: Lines of context shown around a patched region.
CONTEXT_LINES = 2


class Edit(BaseModel):
    """Replace lines `line_from`..`line_to` (1-based, inclusive) with `content`.

    `line_to = line_from - 1` inserts before `line_from` without replacing;
    empty `content` deletes the lines.
    """

    line_from: int = Field(ge=1)
    line_to: int = Field(ge=0)
    content: str = ""


@dataclass
class FileReads:
    """What an agent last saw of each file: real path → digest of its bytes."""

    seen: dict[Path, str] = field(default_factory=dict)

    def record(self, path: Path, data: bytes) -> None:
        self.seen[path] = _digest(data)

    def matches(self, path: Path, data: bytes) -> bool:
        return self.seen.get(path) == _digest(data)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(path: Path, shown_as: str, roots: list[Path], utf8: bool = False) -> bytes:
    """The bytes of a text file, refused clearly when it is missing, huge or binary.

    Opened through `open_inside`, so a link swapped in since the path was
    checked cannot lead out of `roots`. `utf8`: refuse bytes that are not
    UTF-8 (a patch would otherwise rewrite them).
    """
    try:
        fd = open_inside(path, os.O_RDONLY | os.O_NONBLOCK, roots)
    except FileNotFoundError:
        raise RepairableTold("fw.text_editor.missing.md", shown_as=shown_as) from None
    except PathRefused as exc:
        raise RepairableTold("fw.path_refused.md", reason=str(exc)) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RepairableTold("fw.text_editor.not_regular.md", shown_as=shown_as)
        if info.st_size > FILE_LIMIT:
            raise RepairableTold(
                "fw.text_editor.too_big.md",
                shown_as=shown_as,
                size_mb=info.st_size // (1024 * 1024),
                limit_mb=FILE_LIMIT // (1024 * 1024),
            )
        data = handle.read(FILE_LIMIT + 1)
    if b"\x00" in data[:8192]:
        raise RepairableTold("fw.text_editor.binary.md", shown_as=shown_as)
    if utf8:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RepairableTold(
                "fw.text_editor.not_utf8.md", shown_as=shown_as, byte=exc.start
            ) from None
    return data


def numbered(lines: list[str], first: int) -> str:
    """`lines` with their numbers, `first` being the number of the first one."""
    width = len(str(first + len(lines) - 1))
    return "\n".join(f"{n:>{width}} | {line.rstrip(chr(10)).rstrip(chr(13))}"
                     for n, line in enumerate(lines, first))  # fmt: skip


def read_range(
    data: bytes, shown_as: str, line_from: int | None, line_to: int | None
) -> list[Told | str]:
    """The numbered lines asked for, cut at `SHOW_LIMIT` characters with a note how to go on:
    the result's lines, its header and note told, the file's own lines as they are
    (helpers.told.render_lines joins them)."""
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    total = len(lines)
    start = line_from or 1
    end = min(line_to or total, total)
    if total == 0:
        return [told("fw.text_editor.empty.md", shown_as=shown_as)]
    if start > total:
        raise RepairableTold(
            "fw.text_editor.past_end.md", shown_as=shown_as, total=total, start=start
        )
    if end < start:
        raise RepairableTold("fw.text_editor.range_reversed.md", end=end, start=start)
    shown: list[str] = []
    size = 0
    for line in lines[start - 1 : end]:
        size += len(line)
        if shown and size > SHOW_LIMIT:
            break
        shown.append(line)
    last = start + len(shown) - 1
    header = told("fw.text_editor.lines.md", shown_as=shown_as, start=start, last=last, total=total)
    parts: list[Told | str] = [header, numbered(shown, start)]
    if last < end:
        parts.append(told("fw.text_editor.cut.md", limit=SHOW_LIMIT, next=last + 1))
    return parts


def write(path: Path, content: str) -> bytes:
    """Write `content` (keeping an existing file's mode); returns the bytes written."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    write_text_atomic(path, content, mode=mode)
    return content.encode("utf-8")


def apply_edits(data: bytes, edits: list[Edit], shown_as: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with `edits` applied, and the (first, last) new line numbers of each edit."""
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if "\r\n" in text else "\n"
    ordered = sorted(edits, key=lambda e: (e.line_from, e.line_to))
    for edit in ordered:
        if edit.line_to < edit.line_from - 1:
            raise RepairableTold(
                "fw.text_editor.edit_reversed.md", line_from=edit.line_from, line_to=edit.line_to
            )
        if edit.line_from > len(lines) + 1 or edit.line_to > len(lines):
            raise RepairableTold(
                "fw.text_editor.edit_past_end.md",
                line_from=edit.line_from,
                line_to=edit.line_to,
                shown_as=shown_as,
                lines=len(lines),
            )
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.line_from <= before.line_to:
            raise RepairableTold(
                "fw.text_editor.edits_overlap.md",
                first=f"{before.line_from}-{before.line_to}",
                second=f"{after.line_from}-{after.line_to}",
            )
    if lines and not lines[-1].endswith(("\n", "\r")) and ordered[-1].line_from > len(lines):
        lines[-1] += newline  # something is added after the last line: it ends first
    spans: list[tuple[int, int]] = []
    shift = 0
    for edit in ordered:
        new = _as_lines(edit.content, newline)
        start = edit.line_from - 1 + shift
        end = edit.line_to + shift
        lines[start:end] = new
        spans.append((start + 1, start + len(new)))
        shift += len(new) - (edit.line_to - edit.line_from + 1)
    return "".join(lines), spans


def _as_lines(content: str, newline: str) -> list[str]:
    """`content` as lines ending in the file's own newline."""
    return [line + newline for line in content.splitlines()] if content else []


def show_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """The patched regions with a little context, numbered as the file now is."""
    lines = text.splitlines(keepends=True)
    parts = []
    for first, last in spans:
        lo = max(1, first - CONTEXT_LINES)
        hi = min(len(lines), max(last, first - 1) + CONTEXT_LINES)
        parts.append(numbered(lines[lo - 1 : hi], lo))
    return "\n...\n".join(parts)
