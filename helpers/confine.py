"""Paths that come from outside (the model, the page, imported files), kept in their folders.

Every such path goes through `check_name` (refuses what no honest caller
writes: `..`, NUL and control characters, backslashes, percent-encoded dots
and slashes, look-alike Unicode dots) and is then resolved against its
allowed folders with symlinks followed, so a link pointing out is refused
too. `open_inside` checks again through the opened descriptor, so a link
swapped in between the check and the open cannot lead out either.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

# %2e is ".", %2f is "/", %5c is "\": written only to sneak past a check.
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)


class PathRefused(ValueError):
    """A path that may not be used; the message says why, for the model or the user."""


def check_name(raw: str) -> PurePosixPath:
    """`raw` as a path, refused when it is empty or written to escape its folder."""
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("the path is empty")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
        raise PathRefused(f"{raw!r} contains control characters")
    if "\\" in raw:
        raise PathRefused(f"{raw!r} contains a backslash; use / between folders")
    if _ENCODED.search(raw):
        raise PathRefused(f"{raw!r} contains percent-encoded dots or slashes; write them plainly")
    for form in {raw, unicodedata.normalize("NFKC", raw)}:
        if ".." in PurePosixPath(form).parts:
            raise PathRefused(
                f"{raw!r} goes up a folder with '..'; name the path from its folder down"
            )
    if unicodedata.normalize("NFKC", raw).count("/") != raw.count("/"):
        raise PathRefused(f"{raw!r} contains a look-alike slash; write the path plainly")
    return PurePosixPath(raw)


def inside(real: Path, roots: list[Path]) -> bool:
    """True when the real path `real` lies in one of `roots` (roots resolved here)."""
    for root in roots:
        try:
            if real.is_relative_to(root.resolve()):
                return True
        except OSError:
            continue
    return False


def resolve_inside(raw: str, root: Path, *, what: str = "the work folder") -> Path:
    """The real path `raw` names under `root` (relative paths start there).

    The file need not exist (a path to write); symlinks along the way are
    followed, and a result outside `root` is refused. `what` names the folder
    in the refusal.
    """
    name = check_name(raw)
    try:
        candidate = Path(name).expanduser() if raw.startswith("~") else Path(name)
    except RuntimeError:  # "~someone" who does not exist
        raise PathRefused(f"{raw!r} names an unknown home folder") from None
    if not candidate.is_absolute():
        candidate = root / candidate
    real = candidate.resolve()
    if not inside(real, [root]):
        raise PathRefused(f"{raw!r} is outside {what} ({root})")
    return real


def open_inside(path: Path, flags: int, roots: list[Path], mode: int = 0o644) -> int:
    """`os.open(path, flags)`, then the opened file's real path checked against `roots`.

    Returns the descriptor; closes it and raises `PathRefused` when the file
    turned out to be elsewhere (a link swapped in after `resolve_inside`).
    """
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        opened = Path(f"/proc/self/fd/{fd}")
        real = Path(os.readlink(opened)) if opened.is_symlink() else path.resolve()
        if not inside(real, roots):
            raise PathRefused(f"{path} leads outside its folder")
    except BaseException:
        os.close(fd)
        raise
    return fd
