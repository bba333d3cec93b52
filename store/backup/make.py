"""Making a backup: the chosen parts of `usr/` into one zip.

The zip holds `cadre-backup.json` (the manifest: format, version, when, which
parts, whether secrets are in it) and the files under `usr/<path>`. It is
written to a temporary file beside the target and renamed at the end, so a
failed backup leaves no half zip. Links are never followed (one pointing out
of `usr/` would carry a foreign file into the zip) and leftovers of writes in
progress (`.<name>.*.tmp`) are skipped. A memory database is copied through
SQLite's own backup, so a chat writing a memory meanwhile cannot tear it.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from helpers.errors import UserError
from helpers.files import usr_dir
from store.backup import secret_settings
from store.backup.parts import BY_NAME, SECRETS, check_parts, is_secret_file

log = logging.getLogger(__name__)

MANIFEST = "cadre-backup.json"
FORMAT = "cadre-backup"
VERSION = 1
#: Where the files sit inside the zip.
PREFIX = "usr/"
#: SQLite's side files: their content is in the copy the backup API makes.
_SQLITE_SIDE = ("-wal", "-shm", "-journal")


@dataclass
class BackupResult:
    path: Path
    parts: list[str]
    files: int = 0
    bytes: int = 0
    #: Links and special files found and left out (paths under usr/).
    skipped: list[str] = field(default_factory=list)


def _walk(root: Path, relative: PurePosixPath) -> Iterator[tuple[Path, PurePosixPath]]:
    """Regular files under `root` (a file or folder), links not followed, sorted."""
    try:
        info = root.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        for child in sorted(os.scandir(root), key=lambda entry: entry.name):
            yield from _walk(Path(child.path), relative / child.name)
    else:
        yield root, relative


def _leftover(name: str) -> bool:
    """A temporary file of a write in progress (helpers/files.py write_text_atomic)."""
    return name.startswith(".") and name.endswith(".tmp")


def copy_database(source: Path, into: Path) -> Path:
    """A consistent copy of the SQLite file `source` (WAL included), in folder `into`."""
    target = into / f"{len(list(into.iterdir()))}.db"
    reading = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        writing = sqlite3.connect(target)
        try:
            reading.backup(writing)
        finally:
            writing.close()
    finally:
        reading.close()
    return target


def make_backup(target: Path, parts: list[str]) -> BackupResult:
    """Write the zip of `parts` (names of store/backup/parts.py) to `target`."""
    chosen = check_parts(parts)
    if not chosen:
        raise UserError("choose at least one part to back up")
    if SECRETS in chosen:
        chosen = check_parts([*chosen, "settings"])  # most secrets live in the settings
    with_secrets = SECRETS in chosen
    root = usr_dir()
    target = target.expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    result = BackupResult(target, chosen)
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    os.close(fd)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="cadre-backup-") as scratch,
            zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        ):
            manifest = {"format": FORMAT, "version": VERSION, "created_at": time.time(),
                        "parts": chosen, "secrets": with_secrets}  # fmt: skip
            archive.writestr(MANIFEST, json.dumps(manifest, indent=2) + "\n")
            for name in chosen:
                for path in BY_NAME[name].paths:
                    _add(archive, root / path, PurePosixPath(path), result, Path(scratch))
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    log.info("backup of %s written to %s (%d files)", ", ".join(chosen), target, result.files)
    return result


def _add(
    archive: zipfile.ZipFile, root: Path, relative: PurePosixPath, result: BackupResult,
    scratch: Path,
) -> None:  # fmt: skip
    for path, name in _walk(root, relative):
        try:
            _add_file(archive, path, name, result, scratch)
        except FileNotFoundError:
            continue  # deleted since the walk saw it (a chat deleted meanwhile)


def _add_file(
    archive: zipfile.ZipFile, path: Path, name: PurePosixPath, result: BackupResult,
    scratch: Path,
) -> None:  # fmt: skip
    with_secrets = SECRETS in result.parts
    if not stat.S_ISREG(path.lstat().st_mode):
        result.skipped.append(name.as_posix())
        log.warning("backup: %s is a link or special file, left out", path)
        return
    if _leftover(name.name) or name.name.endswith(_SQLITE_SIDE):
        return
    if not with_secrets and is_secret_file(name):
        return
    entry = PREFIX + name.as_posix()
    if name == PurePosixPath("settings.json") and not with_secrets:
        text = secret_settings.without_secrets(path.read_text(encoding="utf-8"))
        archive.writestr(entry, text)
        size = len(text.encode())
    elif name.parts[0] == "memory" and name.suffix == ".db":
        copy = copy_database(path, scratch)
        archive.write(copy, entry)
        size = copy.stat().st_size
    else:
        archive.write(path, entry)
        size = path.stat().st_size
    result.files += 1
    result.bytes += size
