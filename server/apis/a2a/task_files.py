"""Where the A2A tasks lie on disk (server/apis/a2a/tasks.py is the store over them):
`usr/a2a/tasks/<owner>/<task>.task` and `<task>.json`, both names hashes (no owner or task
id a client chose can name a path); what a task's small file says (`About`); and a
deleted account's tasks handed to its heir or removed (`hand_over`), their names kept in
its folder (GONE) so that a late save does not bring one back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from a2a.types.a2a_pb2 import TaskState

from helpers.files import usr_path, write_bytes_atomic

log = logging.getLogger(__name__)

VERSION = 1
#: The folder under usr/.
FOLDER = "a2a/tasks"
#: The file listing the tasks a deleted account had, so a late save does not bring one back.
GONE = ".gone"
#: States after which a task never changes.
DONE = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED,
                  TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED})  # fmt: skip


def name_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def owner_folder(owner: str | None, folder: Path | None = None) -> Path:
    """The folder of `owner`'s tasks ("" or None: the desktop mode's one person)."""
    return (folder or usr_path(FOLDER)) / name_of(owner or "")


@dataclass(frozen=True)
class About:
    """A task's small file: what a list filters, orders and pages by."""

    id: str
    context: str
    state: int
    #: The status's time, in nanoseconds (0: none).
    at: int
    size: int
    node: str
    started: float
    path: Path

    @property
    def done(self) -> bool:
        return self.state in DONE


def hand_over(name: str, heir: str | None, folder: Path | None = None) -> None:
    """A deleted account's tasks: to its heir (who gets its chats), else removed; either
    way their names stay listed in the account's folder (GONE), so a late save of one of
    them (a run stopping as the account goes) does not bring it back for an account made
    later under the same name (server/app.py's `cadre.leaving`)."""
    source = owner_folder(name, folder)
    if not source.is_dir():
        return
    names = sorted({p.stem for p in source.iterdir() if p.suffix in (".json", ".task")}
                   | set(gone_list(source)))  # fmt: skip
    target = owner_folder(heir, folder) if heir is not None else None
    if target is not None:
        target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.name == GONE:
            continue
        if target is not None and path.suffix in (".json", ".task"):
            if not (target / path.name).exists():
                path.replace(target / path.name)
                continue
        path.unlink(missing_ok=True)
    write_bytes_atomic(source / GONE, json.dumps(names).encode(), 0o600)
    log.info("A2A: the tasks of %r are %s", name, f"{heir!r}'s now" if heir else "removed")


def gone_list(owner: Path) -> list[str]:
    """The task files' names a deleted account had (none: it was not deleted)."""
    try:
        names = json.loads((owner / GONE).read_bytes())
    except (OSError, ValueError):  # none (not deleted), or unreadable: nothing listed
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def changed(about: About) -> float:
    return changed_at(str(about.path))


def changed_at(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:  # another node forgot it meanwhile
        return 0.0
