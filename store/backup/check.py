"""Reading a backup before anything is unpacked: its manifest, every entry's path, its size.

A backup comes from outside (an upload, a file someone sent), so everything a
zip can hide is refused up front, from the central directory alone, before
one byte is extracted: a path leaving `usr/` (`..`, an absolute path, a drive
letter, a backslash), a link or special file, an encrypted entry, a name
twice, a file of no known part or of a part the manifest does not list, and
more files or more bytes than the limits allow (a zip bomb). The sizes a zip
declares are checked again while unpacking (store/backup/stage.py), since
a forged header can lie about them.
"""

from __future__ import annotations

import json
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from helpers.confine import PathRefused, check_name
from helpers.errors import UserError
from helpers.settings import load_settings
from store.backup.make import FORMAT, MANIFEST, PREFIX, VERSION
from store.backup.parts import SECRETS, check_parts, fits_its_place, is_secret_file, part_of
from store.persist_chat import DAMAGED


class BackupRefused(UserError):
    """Why a backup cannot be restored, in words a person can act on; nothing was changed."""


@dataclass(frozen=True)
class Limits:
    """The most a restore unpacks (settings `backup_restore_max_mb` and `_max_files`)."""

    max_bytes: int
    max_files: int

    @classmethod
    def from_settings(cls) -> Limits:
        settings = load_settings()
        return cls(settings.backup_restore_max_mb * 1024 * 1024, settings.backup_restore_max_files)


@dataclass(frozen=True)
class Member:
    """A file of the backup: its zip entry and its path under usr/."""

    info: zipfile.ZipInfo
    path: PurePosixPath
    part: str


@dataclass
class Checked:
    """A backup found sound: what it says of itself and the files each part holds."""

    created_at: float
    parts: list[str]
    secrets: bool
    members: list[Member] = field(default_factory=list)

    def files_of(self, part: str) -> list[Member]:
        return [member for member in self.members if member.part == part]


def _relative(raw: str) -> PurePosixPath:
    """A zip entry's name as a path under usr/, or BackupRefused saying why it is not one."""
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise BackupRefused(f"the backup holds an absolute path {raw!r}: refused")
    if not raw.startswith(PREFIX):
        raise BackupRefused(f"the backup holds {raw!r}, outside its usr/ folder: refused")
    try:
        path = check_name(raw[len(PREFIX) :].rstrip("/"))
    except PathRefused as exc:
        raise BackupRefused(f"the backup holds an unsafe path: {exc}") from None
    if path.is_absolute() or not path.parts or any(p in ("", ".") for p in path.parts):
        raise BackupRefused(f"the backup holds an unusable path {raw!r}")
    return path


def _manifest(archive: zipfile.ZipFile) -> dict[str, object]:
    try:
        data = json.loads(archive.read(MANIFEST))
    except KeyError:
        raise BackupRefused(f"this zip is not a Cadre backup: it has no {MANIFEST}") from None
    except (ValueError, zipfile.BadZipFile, OSError) as exc:
        raise BackupRefused(f"the backup's {MANIFEST} cannot be read: {exc}") from None
    except RecursionError:  # valid JSON, yet deeper than Python's parser follows
        raise BackupRefused(
            f"the backup's {MANIFEST} cannot be read: its JSON is nested too deeply"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BackupRefused(f"this zip is not a Cadre backup ({MANIFEST} says otherwise)")
    if data.get("version") != VERSION:
        raise BackupRefused(
            f"the backup is of format version {data.get('version')!r}; this Cadre reads {VERSION}"
        )
    return data


#: The entries read whole into memory, and the most each may declare (far above real ones).
_READ_WHOLE = {MANIFEST: 2**20, f"{PREFIX}settings.json": 16 * 2**20}

#: 1 January 10000: past it (or before 1970) no clock can show the date.
_LATEST = 253402300800


def _created_at(data: dict[str, object]) -> float:
    """The manifest's `created_at` (seconds since 1970); a date no clock can show is refused
    here, not left to fail where the preview prints it."""
    value = data.get("created_at") or 0
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 <= value < _LATEST):
        raise BackupRefused(f"the backup's {MANIFEST} has an unusable created_at {value!r}")
    return float(value)


def check_archive(archive: zipfile.ZipFile, limits: Limits) -> Checked:
    """Everything checkable without unpacking; BackupRefused at the first problem."""
    infos = archive.infolist()
    if len(infos) > limits.max_files + 1:
        raise BackupRefused(
            f"the backup holds {len(infos)} entries; a restore takes at most {limits.max_files}"
            " (setting backup_restore_max_files)"
        )
    declared = sum(info.file_size for info in infos)
    if declared > limits.max_bytes:
        raise BackupRefused(
            f"the backup unpacks to {declared / 2**20:.1f} MB; a restore takes at most"
            f" {limits.max_bytes / 2**20:.0f} MB (setting backup_restore_max_mb)"
        )
    for info in infos:  # read whole into memory later: a few MB zipped could be 4 GB
        cap = _READ_WHOLE.get(info.filename)
        if cap is not None and info.file_size > cap:
            raise BackupRefused(
                f"the backup's {info.filename} is too large ({info.file_size / 2**20:.1f} MB;"
                f" at most {cap // 2**20} MB): not a Cadre backup's"
            )
    data = _manifest(archive)
    listed = data.get("parts")
    try:
        if not isinstance(listed, list):
            raise UserError("no list of parts")
        parts = check_parts([str(name) for name in listed])
    except UserError as exc:
        raise BackupRefused(
            f"the backup's {MANIFEST} lists parts Cadre does not know: {exc}"
        ) from None
    checked = Checked(_created_at(data), parts, bool(data.get("secrets")))
    seen: set[str] = set()
    for info in infos:
        if info.filename == MANIFEST:
            continue
        _check_entry(info, checked, seen)
    return checked


#: A chat id the page and the API open (server/routes/payloads.py's `chat_id`); a folder of
#: chats set aside as damaged is kept whatever its name.
_CHAT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _openable(chat_id: str) -> bool:
    return chat_id == DAMAGED or _CHAT_ID.fullmatch(chat_id) is not None


def _check_entry(info: zipfile.ZipInfo, checked: Checked, seen: set[str]) -> None:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise BackupRefused(f"the backup holds a link {info.filename!r}: refused")
    if info.is_dir() and info.filename == PREFIX:
        return  # a zip made again with `zip -r` lists the folders too
    path = _relative(info.filename)
    if info.is_dir():
        return
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: written without file type bits
        raise BackupRefused(f"the backup holds {info.filename!r}, not a regular file: refused")
    if info.flag_bits & 0x1:
        raise BackupRefused(f"the backup holds an encrypted entry {info.filename!r}: refused")
    key = path.as_posix()
    if key in seen:
        raise BackupRefused(f"the backup holds {info.filename!r} twice: refused")
    seen.add(key)
    part = part_of(path)
    if part is None:
        raise BackupRefused(f"the backup holds {info.filename!r}, of no part Cadre restores")
    if part == "chats" and len(path.parts) > 2 and not _openable(path.parts[1]):
        raise BackupRefused(
            f"the backup holds {info.filename!r}: a chat id the page cannot open (letters,"
            " digits, '-' and '_', at most 64)"
        )
    if not fits_its_place(path):
        raise BackupRefused(
            f"the backup holds {info.filename!r}: a file where Cadre keeps a folder, or inside"
            " what must be a file; it cannot be restored"
        )
    secret = part == SECRETS or is_secret_file(path)
    if part not in checked.parts or (secret and not checked.secrets):
        raise BackupRefused(
            f"the backup holds {info.filename!r}, of a part its {MANIFEST} does not list"
        )
    checked.members.append(Member(info, path, part))


def open_backup(path: Path, limits: Limits) -> tuple[zipfile.ZipFile, Checked]:
    """The zip at `path`, open, and what it holds; BackupRefused when it is no sound backup."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise BackupRefused(
            f"this file is not a readable zip (truncated or damaged?): {exc}"
        ) from None
    except OSError as exc:
        raise BackupRefused(f"cannot read the backup {path}: {exc}") from None
    try:
        return archive, check_archive(archive, limits)
    except BaseException:
        archive.close()
        raise
