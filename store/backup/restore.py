"""Restoring a backup, all or nothing, and the preview of what a restore would do.

`restore_backup` checks the whole zip (store/backup/check.py), unpacks the
chosen parts into a staging folder inside `usr/` and checks them
(store/backup/stage.py), then swaps them in with one rename each
(store/backup/swap.py). Any failure before or during the swap leaves `usr/`
as it was. It changes files only: a running Cadre must let go of its chats
first and read everything again after (server/routes/backups.py does); from
the command line it refuses while a Cadre runs on this `usr/`.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from helpers.files import usr_dir
from store.backup import stage, swap
from store.backup.check import BackupRefused, Limits, open_backup
from store.backup.parts import BY_NAME, PARTS, SECRETS, check_parts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartPreview:
    """One part: what the backup holds of it, and what this Cadre has now (it would go)."""

    name: str
    label: str
    backup_files: int
    backup_bytes: int
    current_files: int
    current_bytes: int
    #: Chats only: how many chats each side holds.
    backup_chats: int = 0
    current_chats: int = 0


@dataclass(frozen=True)
class Preview:
    created_at: float
    secrets: bool
    parts: list[PartPreview]


@dataclass(frozen=True)
class RestoreResult:
    parts: list[str]
    files: int
    bytes: int


def _current(part: str) -> tuple[int, int]:
    """Regular files and bytes this usr/ has of `part` (links not followed)."""
    files = size = 0
    for path in BY_NAME[part].paths:
        root = usr_dir() / path
        if root.is_symlink() or not root.exists():
            continue
        found = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        for item in found:
            if not item.is_symlink() and not item.name.endswith((".tmp", "-wal", "-shm")):
                files += 1
                size += item.stat().st_size
    return files, size


def preview(path: Path, limits: Limits | None = None) -> Preview:
    """What the backup at `path` holds, part by part, beside what it would replace."""
    archive, checked = open_backup(path, limits or Limits.from_settings())
    archive.close()
    rows = []
    for part in PARTS:
        if part.name not in checked.parts:
            continue
        members = checked.files_of(part.name)
        files, size = _current(part.name)
        chats = usr_dir() / "chats"
        rows.append(PartPreview(
            part.name, part.label, len(members), sum(m.info.file_size for m in members),
            files, size,
            backup_chats=sum(1 for m in members if m.path.match("chats/*/chat.json")),
            current_chats=len(list(chats.glob("*/chat.json"))) if part.name == "chats" else 0,
        ))  # fmt: skip
    return Preview(checked.created_at, checked.secrets, rows)


#: Why a restore from outside the server cannot start now.
BUSY = (
    "usr/ is in use: Cadre is running on it (stop it, or restore from its Settings > Backup)"
    " or another restore is under way"
)


def restore_backup(
    path: Path, parts: list[str] | None = None, limits: Limits | None = None,
    in_server: bool = False,
) -> RestoreResult:  # fmt: skip
    """Replace the chosen parts of usr/ (default: every part the backup holds, secrets only
    when named) by the backup's; BackupRefused (nothing changed) when it cannot be done.

    `in_server`: the running Cadre restores (it holds usr/ and has let go of its chats);
    otherwise usr/ is taken for the restore, and refused while a Cadre runs on it."""
    limits = limits or Limits.from_settings()
    archive, checked = open_backup(path, limits)
    try:
        chosen = _choose(parts, checked.parts)
        held = contextlib.nullcontext() if in_server else swap.exclusive(BUSY)
        with held:
            staging = swap.new_stage()
            try:
                written = stage.unpack(archive, checked, chosen, staging / "new", limits)
                stage.prepare(archive, checked, chosen, staging / "new")
                paths = [p for name in chosen for p in BY_NAME[name].paths]
                if SECRETS in chosen and stage.SETTINGS not in paths:
                    paths.append(stage.SETTINGS)  # the secrets live in the settings too
                moves = swap.plan(staging, paths)
                swap.swap(staging, moves)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    finally:
        archive.close()
    files = sum(len(checked.files_of(name)) for name in chosen)
    log.info("restored %s from %s into %s", ", ".join(chosen), path, usr_dir())
    return RestoreResult(chosen, files, written)


def _choose(parts: list[str] | None, held: list[str]) -> list[str]:
    if parts is None:
        return [name for name in held if name != SECRETS]
    chosen = check_parts(parts)
    missing = [name for name in chosen if name not in held]
    if missing:
        raise BackupRefused(f"the backup does not hold {', '.join(missing)}")
    if not chosen:
        raise BackupRefused("choose at least one part to restore")
    return chosen
