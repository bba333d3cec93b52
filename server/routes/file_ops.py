"""What the file panel does on disk: list a folder, read a file, save uploads, rename,
make a folder, delete. Paths come resolved by `server/routes/file_places.py`.

Every read goes through `helpers/confine.open_inside`, as the agents' reads do: a
link swapped in after the check, a hard link, or one of Cadre's secret files is
refused there. An upload is written beside its destination under a temporary
name and renamed into place only once whole, so a failure leaves nothing behind.
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from helpers.confine import PathRefused, inside, open_inside
from server.routes.file_places import Place, Refused, TooBig, new_name

#: Most entries one listing shows (a folder of a million files must not stall the page).
LIST_LIMIT = 2000
#: Most bytes of a text file the preview shows.
PREVIEW_LIMIT = 256 * 1024
MARKDOWN = {".md", ".markdown"}
#: Images the browser shows itself (SVG only as an <img>, where its scripts never run).
IMAGES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".avif", ".svg"}
#: Text sent as text/plain when opened raw (never as HTML the page's origin would run).
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


@dataclass
class Entry:
    """One row of a listing."""

    name: str
    path: str
    #: "folder", "file", or "outside" (a link leading out of the folder, or nowhere).
    kind: str
    size: int
    modified: float


def listing(where: Place, folder: Path) -> tuple[list[Entry], bool]:
    """The entries of `folder`, folders first then by name; True when cut at LIST_LIMIT."""
    if not folder.exists():
        if folder == where.folder:
            return [], False  # a chat's folder before its first save
        raise Refused(f"{where.relative(folder)} does not exist")
    if not folder.is_dir():
        raise Refused(f"{where.relative(folder) or where.label} is not a folder")
    found: list[Entry] = []
    with os.scandir(folder) as scan:
        for item in scan:
            if len(found) == LIST_LIMIT:
                return _sorted(found), True
            entry = _entry(where, folder, item)
            if entry is not None:
                found.append(entry)
    return _sorted(found), False


def _entry(where: Place, folder: Path, item: os.DirEntry[str]) -> Entry | None:
    """The row of `item`; None when it vanished while the folder was read."""
    path = where.relative(folder / item.name)
    try:
        real = Path(item.path).resolve()
    except (RuntimeError, OSError):  # a link that loops: shown, never followed
        return Entry(item.name, path, "outside", 0, 0.0)
    if item.is_symlink() and (not inside(real, [where.folder]) or not real.exists()):
        return Entry(item.name, path, "outside", 0, 0.0)
    try:
        info = item.stat()
    except FileNotFoundError:
        return None
    kind = "folder" if stat.S_ISDIR(info.st_mode) else "file"
    return Entry(item.name, path, kind, info.st_size if kind == "file" else 0, info.st_mtime)


def _sorted(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.kind != "folder", e.name.lower(), e.name))


def entries_json(entries: list[Entry]) -> list[dict[str, object]]:
    return [asdict(e) for e in entries]


def open_file(where: Place, path: Path) -> IO[bytes]:
    """`path` opened for reading, checked through the descriptor (see module docstring)."""
    try:
        fd = open_inside(path, os.O_RDONLY | os.O_NONBLOCK, [where.folder])
    except FileNotFoundError:
        raise Refused(f"{where.relative(path)} does not exist") from None
    except PathRefused as exc:
        raise Refused(f"path refused: {exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # checked before fdopen, which refuses a folder itself
        os.close(fd)
        what = "a folder: open it in the list" if stat.S_ISDIR(mode) else "not a regular file"
        raise Refused(f"{where.relative(path) or where.label} is {what}")
    return os.fdopen(fd, "rb")


def kind_of(path: Path) -> str:
    """How the preview shows a file: "image", "markdown" or "text" (binary found on reading)."""
    suffix = path.suffix.lower()
    if suffix in IMAGES:
        return "image"
    return "markdown" if suffix in MARKDOWN else "text"


def preview(where: Place, path: Path) -> dict[str, object]:
    """What the preview shows of `path`: an image's address is the page's to build; a text
    file's first PREVIEW_LIMIT bytes; a binary file only its size."""
    with open_file(where, path) as handle:
        size = os.fstat(handle.fileno()).st_size
        kind = kind_of(path)
        if kind == "image":
            return {"kind": kind, "size": size}
        data = handle.read(PREVIEW_LIMIT + 1)
    truncated = len(data) > PREVIEW_LIMIT
    data = data[:PREVIEW_LIMIT]
    if b"\0" in data:
        return {"kind": "binary", "size": size}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not truncated or exc.start < len(data) - 3:  # not just a character cut in two
            return {"kind": "binary", "size": size}
        text = data[: exc.start].decode("utf-8")
    return {"kind": kind, "size": size, "text": text, "truncated": truncated}


def raw_type(path: Path) -> str:
    """The Content-Type a file is served raw with: images as themselves, text as plain
    text, everything else as bytes to download (never HTML run on the page's origin)."""
    guessed = mimetypes.guess_type(path.name)[0] or ""
    if path.suffix.lower() in IMAGES and guessed.startswith("image/"):
        return guessed
    if guessed.startswith(TEXT_TYPES):
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


@dataclass
class Upload:
    """One uploaded file: its name as sent, and its bytes (a file werkzeug spooled)."""

    filename: str
    stream: IO[bytes]

    def size(self) -> int:
        self.stream.seek(0, os.SEEK_END)
        size = self.stream.tell()
        self.stream.seek(0)
        return size


def save_uploads(where: Place, folder: Path, uploads: list[Upload], limit: int) -> list[str]:
    """Save every upload in `folder` (never over an existing file: `a-1.txt` then), or none.

    All sizes and names are checked before anything is written; the total may not pass
    `limit` bytes. Returns the saved paths, named from the place's folder down.
    """
    where.check_writable()  # new names only: an existing file is never written over
    if not folder.is_dir():
        raise Refused(f"{where.relative(folder) or where.label} is not a folder")
    names = [new_name(os.path.basename(u.filename.replace("\\", "/"))) for u in uploads]
    total = sum(u.size() for u in uploads)
    if total > limit:
        raise TooBig(too_big(total, limit))
    saved = []
    for upload, name in zip(uploads, names, strict=True):
        saved.append(where.relative(_write_new(folder, name, upload.stream)))
    return saved


def too_big(size: int, limit: int) -> str:
    return (
        f"the upload is {_mb(size)}, more than the limit of {_mb(limit)}; nothing was saved"
        " (the limit is the setting 'Largest upload')"
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _write_new(folder: Path, name: str, stream: IO[bytes]) -> Path:
    """Copy `stream` to a temporary file in `folder`, then link it under a free name."""
    fd, tmp = tempfile.mkstemp(prefix=".upload-", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            shutil.copyfileobj(stream, handle, 1 << 20)
        stem, suffix = Path(name).stem, Path(name).suffix
        target, counter = folder / name, 1
        while True:
            try:
                os.link(tmp, target)  # fails when the name is taken: nothing is overwritten
                return target
            except FileExistsError:
                target = folder / f"{stem}-{counter}{suffix}"
                counter += 1
    finally:
        Path(tmp).unlink(missing_ok=True)


def rename(where: Place, entry: Path, name: str) -> Path:
    """Give `entry` (a file, folder or link) a new name in its folder."""
    where.check_change(entry)
    _exists(where, entry)
    target = entry.parent / new_name(name)
    if target.exists() or target.is_symlink():
        raise Refused(f"{where.relative(target)} already exists; pick another name")
    os.rename(entry, target)
    return target


def make_folder(where: Place, parent: Path, name: str) -> Path:
    where.check_writable()
    target = parent / new_name(name)
    try:
        target.mkdir()
    except FileExistsError:
        raise Refused(f"{where.relative(target)} already exists") from None
    except FileNotFoundError:
        raise Refused(f"{where.relative(parent) or where.label} does not exist") from None
    return target


def delete(where: Place, entry: Path) -> None:
    """Delete a file, a link (never what it points to) or a folder with all it holds."""
    where.check_change(entry)
    _exists(where, entry)
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)  # removes links inside, never follows them
    else:
        entry.unlink()


def _exists(where: Place, entry: Path) -> None:
    if not entry.exists() and not entry.is_symlink():
        raise Refused(f"{where.relative(entry)} does not exist")
