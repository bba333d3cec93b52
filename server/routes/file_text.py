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
written through. Reads go through `helpers/confine.open_inside` as the panel's others do;
a save opens the file's folder once so (checked inside through the descriptor) and reads,
writes and replaces relative to it, so a folder on the path swapped for a link between
the check and the write (an agent works in the same folder) cannot lead the write out.
A new file ("New file" in the panel) is made empty in such an opened folder, only where
nothing is (not even a link).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
import threading
from pathlib import Path

from helpers.confine import PathRefused, open_in_folder, open_inside
from server.routes.file_places import Place, Refused

#: Largest file the editor opens (and saves): bigger ones are for downloading.
EDIT_LIMIT = 1024 * 1024
#: A file the editor makes is its owner's only, as an upload is (written through mkstemp).
NEW_FILE_MODE = 0o600
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
    data, size, _mode = found
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
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(f"the text for {name} holds characters that are not valid text") from None
    if len(data) > EDIT_LIMIT:
        raise TooBigToEdit(_too_big(name))
    with _SAVING:
        folder = _open_folder(where, path.parent, name)
        try:
            now = _read_in(where, folder, path, name)
            current = "" if now is None else version_of(now[0])
            if current != version and not force:
                raise Conflict(_changed(name, now is None), current)
            _replace(folder, path.name, name, data, NEW_FILE_MODE if now is None else now[2])
        finally:
            os.close(folder)
    return {"path": name, "version": version_of(data), "size": len(data)}


def make(where: Place, path: Path) -> dict[str, object]:
    """A new empty file at `path` (its name checked by the caller), for the editor to open;
    refused when anything is there already, never written through a link."""
    name = where.relative(path)
    where.check_change(path)
    folder = _open_folder(where, path.parent, name)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(path.name, flags, NEW_FILE_MODE, dir_fd=folder))
    except FileExistsError:
        raise Refused(f"{name} already exists: pick another name, or open it from the list"
                      ) from None  # fmt: skip
    except OSError as exc:
        raise Refused(f"{name} could not be made ({exc.strerror})") from None
    finally:
        os.close(folder)
    return {"path": name, "version": version_of(b""), "size": 0}


def _read(where: Place, path: Path, name: str) -> tuple[bytes, int, int] | None:
    """The first EDIT_LIMIT + 1 bytes of `path` (enough to tell a version or a size over
    the limit), its size and permissions; None when there is no file there."""
    try:
        fd = open_inside(path, os.O_RDONLY | os.O_NONBLOCK, [where.folder])
    except FileNotFoundError:
        return None
    except PathRefused as exc:
        raise Refused(f"path refused: {exc}") from None
    return _read_open(fd, where, name)


def _read_open(fd: int, where: Place, name: str) -> tuple[bytes, int, int]:
    """What `_read` gives, of the opened `fd` (closed here)."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # checked before fdopen, which refuses a folder itself
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise Refused(f"{name or where.label} is a folder: open it in the list")
        raise Refused(f"{name} is not a regular file, so the editor does not open it")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(EDIT_LIMIT + 1), os.fstat(fd).st_size, stat.S_IMODE(mode)


def _open_folder(where: Place, folder: Path, name: str) -> int:
    """The folder of the file to save, opened once and checked inside the place through the
    descriptor: the read and the write go through it, never through the path again (a
    folder on it swapped for a link after this leads nowhere)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return open_inside(folder, flags, [where.folder])
    except (FileNotFoundError, NotADirectoryError):
        raise Refused(f"the folder of {name} does not exist") from None
    except PathRefused as exc:
        raise Refused(f"path refused: {exc}") from None
    except OSError as exc:  # ELOOP: the folder (resolved) was made a link since
        raise Refused(_moved(name, exc)) from None


def _read_in(where: Place, folder: int, path: Path, name: str) -> tuple[bytes, int, int] | None:
    """`_read` of the file named `path.name` in the opened `folder`, never through a link."""
    try:
        fd = open_in_folder(folder, path.name, os.O_RDONLY | os.O_NONBLOCK, path)
    except FileNotFoundError:
        return None
    except PathRefused as exc:
        raise Refused(f"path refused: {exc}") from None
    except OSError as exc:  # ELOOP: the file (resolved) was made a link since
        raise Refused(_moved(name, exc)) from None
    return _read_open(fd, where, name)


def _replace(folder: int, target: str, name: str, data: bytes, mode: int) -> None:
    """`target` in the opened `folder` replaced whole by `data` with permissions `mode`: a
    temporary file beside it, then `os.replace` (which never writes through a link)."""
    tmp = ""
    try:
        fd, tmp = _temporary(folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(fd, mode)
            os.fsync(fd)
        os.replace(tmp, target, src_dir_fd=folder, dst_dir_fd=folder)
        tmp = ""
    except OSError as exc:
        if os.fstat(folder).st_nlink == 0:  # a folder deleted (or swapped) since it was opened
            raise Refused(_moved(name, exc)) from None
        raise Refused(f"{name} could not be saved ({exc.strerror}); nothing was saved") from None
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)


def _temporary(folder: int) -> tuple[int, str]:
    """A new file of a free name in `folder`, only its owner's until it is whole."""
    while True:
        tmp = f".edit-{secrets.token_hex(8)}.part"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            return os.open(tmp, flags, 0o600, dir_fd=folder), tmp
        except FileExistsError:
            continue


def _moved(name: str, exc: OSError) -> str:
    return (
        f"the folder of {name} was moved, deleted or made a link while saving"
        f" ({exc.strerror}), so nothing was saved: open the file again from the list"
    )


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
