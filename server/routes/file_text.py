"""The file panel's editor on disk: read a text file to edit, save it back with a conflict check.

A file is opened for editing only when it is text (UTF-8, no NUL byte) and at most
EDIT_LIMIT bytes: a bigger one is offered for download, a binary one refused, so the
page never holds (or writes back) what it cannot show faithfully.

The page keeps the version it loaded (a SHA-256 of the bytes: an mtime can stay the
same across two writes in one tick, a size across an edit) and sends it with the save;
when the file on disk is no longer that version (an agent wrote it, another page saved
it, it was deleted) the save is refused as a `Conflict` (a 409) unless the person chose
to overwrite. The save replaces the file whole (a temporary file beside it, then
`os.replace`), so a failure leaves the old file and a link swapped in is replaced, never
written through. Reads go through `helpers/confine.open_inside` as the panel's others do.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
from pathlib import Path

from helpers.confine import PathRefused, open_inside
from server.routes.file_places import Place, Refused

#: Largest file the editor opens (and saves): bigger ones are for downloading.
EDIT_LIMIT = 1024 * 1024
#: One save at a time in this process: the version check and the write go together.
_SAVING = threading.Lock()


class TooBigToEdit(Refused):
    """A file (or a text to save) over EDIT_LIMIT (a 413)."""


class NotText(Refused):
    """A file that is not UTF-8 text (a 415): the editor would garble it."""


class Conflict(Refused):
    """The file is not the version the page loaded (a 409); `current` is the version now
    ("" when the file is gone)."""

    def __init__(self, message: str, current: str) -> None:
        super().__init__(message)
        self.current = current


def version_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(where: Place, path: Path) -> dict[str, object]:
    """The text of `path` and its version, for the editor; refused when too big or binary."""
    name = where.relative(path)
    found = _read(where, path, name)
    if found is None:
        raise Refused(f"{name} does not exist")
    data, size = found
    if max(len(data), size) > EDIT_LIMIT:
        raise TooBigToEdit(_too_big(name))
    try:
        if b"\0" in data:
            raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotText(
            f"{name} is not a text file (it holds bytes that are not UTF-8 text), so the"
            " editor does not open it: download it to open it with a program of your own"
        ) from None
    return {"path": name, "text": text, "version": version_of(data), "size": len(data)}


def save(where: Place, path: Path, text: str, version: str, force: bool) -> dict[str, object]:
    """Write `text` to `path` when the file is still `version` ("" for a file that should
    not exist yet), or whatever it is when `force`; returns the new version."""
    name = where.relative(path)
    where.check_change(path)
    if path.is_dir():
        raise Refused(f"{name} is a folder: pick a file to save")
    if not path.parent.is_dir():
        raise Refused(f"the folder of {name} does not exist")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(f"the text for {name} holds characters that are not valid text") from None
    if len(data) > EDIT_LIMIT:
        raise TooBigToEdit(_too_big(name))
    with _SAVING:
        now = _read(where, path, name)
        current = "" if now is None else version_of(now[0])
        if current != version and not force:
            raise Conflict(_changed(name, now is None), current)
        _replace(path, data)
    return {"path": name, "version": version_of(data), "size": len(data)}


def _read(where: Place, path: Path, name: str) -> tuple[bytes, int] | None:
    """The first EDIT_LIMIT + 1 bytes of `path` (enough to tell a version or a size over
    the limit) and its size; None when there is no file there."""
    try:
        fd = open_inside(path, os.O_RDONLY | os.O_NONBLOCK, [where.folder])
    except FileNotFoundError:
        return None
    except PathRefused as exc:
        raise Refused(f"path refused: {exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # checked before fdopen, which refuses a folder itself
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise Refused(f"{name or where.label} is a folder: open it in the list")
        raise Refused(f"{name} is not a regular file, so the editor does not open it")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(EDIT_LIMIT + 1), os.fstat(fd).st_size


def _replace(path: Path, data: bytes) -> None:
    """`path` replaced whole by `data`, keeping its permissions (0644 for a new file)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=".edit-", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _too_big(name: str) -> str:
    # The size itself is in the listing (and 1.0 MB "more than 1.0 MB" would read oddly).
    return (
        f"{name} is larger than the {_size(EDIT_LIMIT)} the editor opens:"
        " download it to change it with a program of your own"
    )


def _changed(name: str, gone: bool) -> str:
    if gone:
        return (
            f"{name} was deleted after you opened it (by an agent or another page)."
            " Save again to write it anew with your text, or close the editor"
        )
    return (
        f"{name} changed on disk after you opened it (an agent or another page wrote it)."
        " Reload it to see the new text (your changes are dropped), or overwrite it with yours"
    )


def _size(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} kB"
    return f"{size / (1024 * 1024):.1f} MB"
