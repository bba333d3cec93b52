"""Paths that come from outside (the model, the page, imported files), kept in their folders.

Every such path goes through `check_name` (refuses what no honest caller
writes: `..`, NUL and control characters, backslashes, percent-encoded dots
and slashes, look-alike Unicode dots) and is then resolved against its
allowed folders with symlinks followed, so a link pointing out is refused
too. `open_inside` checks again through the opened descriptor, so a link
swapped in between the check and the open cannot lead out either; a writer
that opens the folder so and then its file with `open_in_folder` writes where
it checked, whatever is swapped in along the path after.

A hard link has no path to check: `ln ../settings.json x.txt` makes `x.txt`
the settings file itself. Its other names cannot be found cheaply, so
`open_inside` refuses any regular file with more than one name, and Cadre's
own secret files (settings, the session key) by device and inode wherever
they are reached (a work folder set to a folder holding `usr/`). Writers
replace a file whole (`os.replace`), which never writes through a link, so a
write to such a name is safe and allowed. Directories cannot be hard-linked.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path, PurePosixPath

from helpers.files import usr_path

# %2e is ".", %2f is "/", %5c is "\": written only to sneak past a check.
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)
#: Cadre's own secret files in usr/, never opened for a tool or an include.
PROTECTED = ("settings.json", "secret_key")


class PathRefused(ValueError):
    """A path that may not be used; the message says why, for the model or the user."""


class FileRefused(PathRefused):
    """A file never opened, whatever path names it: a hard link, a secret file of Cadre's."""


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
        except (OSError, RuntimeError):  # a root that is a link looping holds nothing
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
    try:
        real = candidate.resolve()
    except (RuntimeError, OSError):  # a link that loops (Python 3.11 raises RuntimeError)
        raise PathRefused(f"{raw!r} is a link that loops") from None
    if not inside(real, [root]):
        raise PathRefused(f"{raw!r} is outside {what} ({root})")
    return real


def open_inside(path: Path, flags: int, roots: list[Path], mode: int = 0o644) -> int:
    """`os.open(path, flags)`, then the opened file checked: inside `roots`, one name only.

    Returns the descriptor; closes it and raises `PathRefused` when the file
    turned out to be elsewhere (a link swapped in after `resolve_inside`), is
    a hard link, or is one of Cadre's own secret files.
    """
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        opened = Path(f"/proc/self/fd/{fd}")
        real = Path(os.readlink(opened)) if opened.is_symlink() else path.resolve()
        if not inside(real, roots):
            raise PathRefused(f"{path} leads outside its folder")
        _check_identity(os.fstat(fd), path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_in_folder(folder_fd: int, name: str, flags: int, shown: Path, mode: int = 0o600) -> int:
    """`os.open(name, flags, dir_fd=folder_fd)` never through a link, checked as `open_inside`
    checks a file: one name only, none of Cadre's secret files.

    For a writer holding its folder open (itself opened by `open_inside`, so inside): a
    folder swapped for a link after that cannot redirect what is opened in it. `name`
    is one name in that folder; `shown` is the path the refusals name.
    """
    if not name or "/" in name or name in (".", ".."):
        raise PathRefused(f"{shown} is not a name in its folder")
    flags |= os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags, mode, dir_fd=folder_fd)
    try:
        _check_identity(os.fstat(fd), shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_identity(info: os.stat_result, path: Path) -> None:
    if not stat.S_ISREG(info.st_mode):
        return
    if info.st_nlink > 1:
        raise FileRefused(
            f"{path} is a hard link (the same file has {info.st_nlink} names, and another"
            " may be outside the allowed folders), so it is not opened; make a copy of your"
            " own with cp and use that"
        )
    if (info.st_dev, info.st_ino) in _protected():
        raise FileRefused(f"{path} is one of Cadre's own secret files, which tools never open")


def _protected() -> set[tuple[int, int]]:
    """Device and inode of each of Cadre's secret files present now."""
    found = set()
    for name in PROTECTED:
        try:
            info = usr_path(name).stat()
        except OSError:
            continue
        found.add((info.st_dev, info.st_ino))
    return found


def read_inside(path: Path, roots: list[Path], limit: int) -> bytes:
    """Up to `limit` + 1 bytes of the regular file `path`, opened through `open_inside`.

    Non-blocking, so a FIFO planted in a folder cannot hang the reader.
    """
    fd = open_inside(path, os.O_RDONLY | os.O_NONBLOCK, roots)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathRefused(f"{path} is not a regular file")
        return handle.read(limit + 1)
