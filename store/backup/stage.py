"""Unpacking a checked backup into a staging folder and checking what came out.

Bytes are counted as they are written, against each entry's declared size
and the restore's limit in total: a forged header cannot make a restore
write more than it allows. A damaged entry (its CRC does not match) stops
the restore here, before anything of `usr/` was touched. Then the settings
are merged (this Cadre's secrets kept unless the backup's were asked for) and
validated, a project's secrets files carried over when secrets stay, the
JSON files of chats and the scheduler parsed, and each memory database
checked by SQLite.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import zipfile
from pathlib import Path, PurePosixPath

from accounts.spaces import USERS_DIR
from helpers.errors import UserError
from helpers.files import usr_dir
from memory.store import schema_problem
from store.backup import secret_settings
from store.backup.check import BackupRefused, Checked, Limits, Member
from store.backup.parts import SECRETS, is_secret_file

_CHUNK = 1024 * 1024
SETTINGS = "settings.json"


def _wanted(member: Member, parts: list[str]) -> bool:
    if member.part not in parts:
        return False
    # A project's secrets come only with the secrets; the settings file is written by
    # `prepare` (merged), never as it is in the zip.
    return (
        SECRETS in parts or not is_secret_file(member.path)
    ) and member.path.as_posix() != SETTINGS


def unpack(archive: zipfile.ZipFile, checked: Checked, parts: list[str], into: Path,
           limits: Limits) -> int:  # fmt: skip
    """Write the members of `parts` under `into`; the bytes written."""
    total = 0
    for member in checked.members:
        if not _wanted(member, parts):
            continue
        target = into.joinpath(*member.path.parts)
        written = 0
        try:
            target.parent.mkdir(parents=True, exist_ok=True)  # a file of that name: refused
            with archive.open(member.info) as source, open(target, "xb") as sink:
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    total += len(chunk)
                    if written > member.info.file_size or total > limits.max_bytes:
                        raise BackupRefused(
                            f"{member.info.filename!r} unpacks to more than the backup declares:"
                            " refused as a zip bomb"
                        )
                    sink.write(chunk)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise BackupRefused(
                f"{member.info.filename!r} cannot be unpacked (damaged?): {exc}"
            ) from None
        # The zip's mode, but always the owner's to read and write (a read-only chat or
        # memory database could not be saved again) and never others' to write.
        given = (member.info.external_attr >> 16) & 0o777
        mode = (given & 0o755 | 0o600) if given else 0o644
        os.chmod(target, 0o600 if member.part == SECRETS else mode)
    return total


def _settings_text(archive: zipfile.ZipFile, checked: Checked) -> str | None:
    found = [m for m in checked.members if m.path.as_posix() == SETTINGS]
    if not found:
        return None
    try:
        return archive.read(found[0].info).decode("utf-8")
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise BackupRefused(f"the backup's settings.json cannot be read: {exc}") from None


def prepare(archive: zipfile.ZipFile, checked: Checked, parts: list[str], into: Path) -> None:
    """The staged files made ready and checked; BackupRefused says what is wrong."""
    current_path = usr_dir() / SETTINGS
    current = current_path.read_text(encoding="utf-8") if current_path.exists() else None
    if "settings" in parts or SECRETS in parts:
        backup = _settings_text(archive, checked)
        base = backup if "settings" in parts else (current or "{}")
        secrets_from = backup if SECRETS in parts else current
        if base is not None:
            try:
                merged = ("settings" in parts) != (SECRETS in parts)  # the two from two files
                text = secret_settings.restored(base, secrets_from, merged)
            except UserError as exc:  # the backup's settings are unusable
                raise BackupRefused(str(exc)) from None
            except RecursionError:  # JSON in a setting's text (mcp_servers), too deep
                raise BackupRefused(
                    f"the backup's {SETTINGS} cannot be read: a setting holds JSON nested"
                    " too deeply"
                ) from None
            (into / SETTINGS).write_text(text, encoding="utf-8")
            os.chmod(into / SETTINGS, 0o600)
    if "projects" in parts and SECRETS not in parts:
        _keep_project_secrets(into)
    _check_files(into)


def _keep_project_secrets(into: Path) -> None:
    """This Cadre's secret files (projects' secrets, each person's own settings: anyone's,
    parts.is_secret_file), kept for the projects and people the backup brings back."""
    here = usr_dir()
    for top in ("projects", USERS_DIR):
        if not (here / top).is_dir():
            continue
        for path in (here / top).rglob("*"):
            relative = PurePosixPath(*path.relative_to(here).parts)
            if path.is_symlink() or not path.is_file() or not is_secret_file(relative):
                continue
            target = into.joinpath(*relative.parts)
            if target.parent.is_dir() and not target.exists():
                shutil.copy2(path, target)


def _check_files(into: Path) -> None:
    for pattern in ("chats/*/chat.json", "scheduler/**/*.json"):
        for path in into.glob(pattern):
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError, OSError) as exc:  # OSError: a folder
                name = path.relative_to(into).as_posix()
                raise BackupRefused(f"the backup's {name} is damaged: {exc}") from None
            except RecursionError:  # valid JSON, yet deeper than Python's parser follows
                name = path.relative_to(into).as_posix()
                raise BackupRefused(
                    f"the backup's {name} is damaged: its JSON is nested too deeply to be read"
                ) from None
    for path in into.glob("memory/**/*.db"):
        name = path.relative_to(into).as_posix()
        try:
            db = sqlite3.connect(path)  # our own staged copy: SQLite may add its side files
            try:
                verdict = db.execute("PRAGMA quick_check").fetchone()[0]
                # Sound for SQLite, yet maybe not ours: the Memory panel then failed on it.
                unusable = schema_problem(db) if verdict == "ok" else None
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            raise BackupRefused(f"the backup's {name} is no usable database: {exc}") from None
        if verdict != "ok":
            raise BackupRefused(f"the backup's {name} is damaged: {verdict}")
        if unusable:
            raise BackupRefused(f"the backup's {name} is not a memory database: {unusable}")
