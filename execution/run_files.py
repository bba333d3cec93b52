"""Where a session's run files go: memory (a tmpfs), not the disk, where one is found.

Code reaches a session as a file the session runs (execution/terminal.py), and
that code may carry a secret's value (`§§secret(NAME)` is expanded in it). The
file lives for one run only; in a folder on a tmpfs (`/dev/shm`, or the user's
runtime folder) its bytes never reach the disk at all. Each session has its own
folder (owner-only, a random name), removed when the session ends; folders of a
Cadre that was killed before it could remove them are removed by the next one.
Where no tmpfs can be used, the files go to the chat's folder as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
from pathlib import Path

from execution.process_tree import start_time

log = logging.getLogger(__name__)

PREFIX = "cadre-run-"


def _tmpfs_mounts() -> set[str]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return set()
    return {f[1] for f in (line.split() for line in lines) if len(f) > 2 and f[2] == "tmpfs"}


def memory_root() -> Path | None:
    """A writable folder on a tmpfs, or None."""
    mounts = _tmpfs_mounts()
    candidates = ["/dev/shm", os.environ.get("XDG_RUNTIME_DIR", "")]
    for candidate in candidates:
        if candidate in mounts and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    return None


def new_folder() -> Path | None:
    """A new owner-only folder in memory for one session's run files, or None."""
    root = memory_root()
    if root is None:
        return None
    sweep(root)
    me = os.getpid()
    folder = root / f"{PREFIX}{me}-{start_time(me)}-{secrets.token_hex(6)}"
    try:
        folder.mkdir(mode=0o700)  # never an existing one: the name is new and random
    except OSError as exc:
        log.debug("run files go to the chat's folder: %s", exc)
        return None
    return folder


def sweep(root: Path) -> None:
    """Remove the run folders of Cadre processes that are gone."""
    with contextlib.suppress(OSError):
        for folder in root.glob(f"{PREFIX}*"):
            try:
                pid, start, _ = folder.name.removeprefix(PREFIX).split("-", 2)
                alive = start_time(int(pid)) == int(start)
            except ValueError:
                continue  # not one of ours in the expected form
            if not alive and folder.stat().st_uid == os.getuid():
                shutil.rmtree(folder, ignore_errors=True)
