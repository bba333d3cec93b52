"""Putting staged parts in place all at once, or not at all, even across a crash.

The new files are unpacked into `usr/.restore-<id>/new/` (inside `usr/`, so
on the same file system and every move is one rename). The swap moves each
current path aside into `usr/.restore-<id>/old/` and the staged one in. The
planned moves are written to `journal.json` first: a failure part way puts
back what was moved (in reverse), and a crash part way is put back the next
time Cadre starts or restores (`recover`). Only once every move is done is
the old data removed.

`usr/.restore.lock` keeps two restores apart, and a restore from the command
line apart from a running Cadre: the server holds it shared while it runs
(`hold_while_running`), a restore exclusively. Held exclusively at start,
`recover` also removes the uploads of restores that never ended (uploads.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from helpers.errors import UserError
from helpers.files import usr_dir, write_text_atomic
from store.backup import uploads

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; restore from the UI there
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

STAGE_PREFIX = ".restore-"
JOURNAL = "journal.json"
LOCK = ".restore.lock"


class RestoreBusy(UserError):
    """Another restore, or a running Cadre, holds `usr/`."""


@dataclass(frozen=True)
class Move:
    source: str
    target: str


def _lock_file() -> IO[str]:
    root = usr_dir()
    root.mkdir(parents=True, exist_ok=True)
    return open(root / LOCK, "a+", encoding="utf-8")  # noqa: SIM115 - held by the caller


@contextlib.contextmanager
def exclusive(message: str) -> Iterator[None]:
    """Hold `usr/` for a restore; RestoreBusy with `message` when someone else holds it."""
    handle = _lock_file()
    try:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RestoreBusy(message) from None
        yield
    finally:
        handle.close()  # closing releases the lock


def hold_while_running() -> IO[str]:
    """Held by a running Cadre (shared) so a command-line restore refuses meanwhile;
    it waits while one is under way. Keep the returned handle open until the end."""
    handle = _lock_file()
    if fcntl is not None:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("a restore of %s is under way: waiting for it to end", usr_dir())
            fcntl.flock(handle, fcntl.LOCK_SH)
    return handle


def new_stage() -> Path:
    """An empty staging folder inside usr/ (same file system: every move is one rename)."""
    root = usr_dir()
    root.mkdir(parents=True, exist_ok=True)
    stage = root / f"{STAGE_PREFIX}{os.urandom(6).hex()}"
    (stage / "new").mkdir(parents=True)
    return stage


def _write_journal(stage: Path, moves: list[Move], state: str) -> None:
    data = {"state": state, "moves": [[m.source, m.target] for m in moves]}
    write_text_atomic(stage / JOURNAL, json.dumps(data, indent=2) + "\n")


def plan(stage: Path, paths: list[str]) -> list[Move]:
    """The renames that replace each of `paths` (under usr/) by its staged version."""
    root = usr_dir()
    moves = []
    for path in paths:
        current, staged, old = root / path, stage / "new" / path, stage / "old" / path
        if os.path.lexists(current):
            moves.append(Move(str(current), str(old)))
        if os.path.lexists(staged):
            moves.append(Move(str(staged), str(current)))
    return moves


def swap(stage: Path, moves: list[Move]) -> None:
    """Make every move, or none: a failure puts back those done and raises."""
    _write_journal(stage, moves, "swapping")
    done: list[Move] = []
    try:
        for move in moves:
            Path(move.target).parent.mkdir(parents=True, exist_ok=True)
            os.rename(move.source, move.target)
            done.append(move)
    except BaseException:
        _undo(done)
        raise
    _write_journal(stage, moves, "done")


def _undo(done: list[Move]) -> None:
    for move in reversed(done):
        if os.path.lexists(move.target) and not os.path.lexists(move.source):
            os.rename(move.target, move.source)


def recover() -> list[str]:
    """Put back what a restore cut short left half done; remove its staging folders and
    the backups uploaded for restores that never ended (store/backup/uploads.py).
    Returns what was put back (folders named), for the log. Skipped while a restore runs
    or a Cadre runs on usr/: what is left then may still be theirs."""
    if not _stages() and not uploads.left_behind():
        return []
    undone: list[str] = []
    try:
        with exclusive("a restore is under way"):
            for stage in _stages():  # listed again: only now is nobody else in usr/
                undone += _recover(stage)
            uploads.sweep()
    except RestoreBusy:
        return []
    return undone


def _stages() -> list[Path]:
    root = usr_dir()
    if not root.is_dir():
        return []
    return [p for p in root.iterdir() if p.name.startswith(STAGE_PREFIX) and p.is_dir()]


def _recover(stage: Path) -> list[str]:
    journal = stage / JOURNAL
    try:
        data = json.loads(journal.read_text(encoding="utf-8")) if journal.exists() else {}
    except ValueError:
        data = {}
    undone = []
    if data.get("state") == "swapping":
        moves = [Move(source, target) for source, target in data.get("moves", [])]
        _undo(moves)
        undone.append(stage.name)
        log.warning("a restore was cut short: %s put back as it was", usr_dir())
    shutil.rmtree(stage, ignore_errors=True)
    return undone
