"""A sandboxed session's scratch space: its /tmp, /var/tmp and home, on disk, size-limited.

Empty folders in memory (tmpfs) would be simplest, but each could grow to half
the machine's memory, and what a command wrote there (2.5 GB in a probe) stayed
in memory until the chat was reset. So each session gets a folder of its own
on disk, under `usr/scratch/`, removed when the session ends. Its name starts
with Cadre's pid and start time: a folder whose Cadre is gone (killed) is
removed when the next one is made.

No file system Cadre may use without root gives a folder a size of its own, so
the size is watched instead (`Watch`): the folder's blocks are counted every
`INTERVAL` seconds, and a session past its limit is stopped and its agent told
why. A command writing faster than the count sees may go past the limit for
that moment; the session is then stopped and the space given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from execution.process_tree import start_time
from helpers.files import usr_path

log = logging.getLogger(__name__)

#: Seconds between two counts of a session's scratch space.
INTERVAL = 0.5
#: Entries counted at most in one count: a folder holding more counts as full (a count
#: that never ends would let the space grow unseen).
MOST_ENTRIES = 200_000
#: The folders of one scratch space, each shown at its place in the sandbox.
FOLDERS = ("tmp", "var-tmp", "home")


def scratch_root() -> Path:
    """The folder of every session's scratch space."""
    return usr_path("scratch")


def create(mark: str) -> Path:
    """A new, empty scratch space for a session (and the old ones of a Cadre that is gone
    removed first)."""
    root = scratch_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    sweep(root)
    path = root / f"{os.getpid()}-{start_time(os.getpid())}-{mark}"
    path.mkdir(mode=0o700)
    for name in FOLDERS:
        # /tmp's usual mode (anyone writes, each keeps their own) for the two /tmp folders.
        (path / name).mkdir(mode=0o700)
        if name != "home":
            os.chmod(path / name, 0o1777)
    return path


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_soon(path: Path) -> None:
    """`remove` in a worker thread when called on a running loop (a session ending on the
    agents' loop: a scratch space of gigabytes takes a while to delete)."""
    try:
        asyncio.get_running_loop().run_in_executor(None, remove, path)
    except RuntimeError:  # no loop: Cadre is stopping, this thread may wait
        remove(path)


def sweep(root: Path) -> None:
    """Remove the scratch spaces whose Cadre is gone."""
    with contextlib.suppress(OSError):
        for folder in root.iterdir():
            pid, _, rest = folder.name.partition("-")
            started, _, _ = rest.partition("-")
            if not (pid.isdigit() and started.isdigit()):
                continue  # not one of ours in the expected form: leave it alone
            if start_time(int(pid)) != int(started):
                remove(folder)
                log.info("removed the scratch space %s left by a Cadre that is gone", folder)


def used(path: Path) -> int:
    """Bytes of disk the folder's files take (their blocks: a sparse file counts as what it
    holds); past `MOST_ENTRIES` entries, more than any limit."""
    total, seen, todo = 0, 0, [str(path)]
    while todo:
        folder = todo.pop()
        try:
            entries = os.scandir(folder)
        except OSError:  # removed meanwhile, or made unreadable by the command
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > MOST_ENTRIES:
                    return 1 << 62
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += info.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
    return total


class Watch:
    """Counts a scratch space while its session lives; `over` is called once, past the
    limit, with the reason in plain words."""

    def __init__(self, path: Path, limit_mb: int, over: Callable[[str], None]) -> None:
        self.path = path
        self.limit = limit_mb * 1024 * 1024
        self._over = over
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.limit > 0:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL)
            size = await asyncio.to_thread(used, self.path)
            if size > self.limit:
                log.info("a code session's scratch space %s is over its limit", self.path)
                self._task = None
                self._over(
                    f"its scratch space (/tmp, /var/tmp and its home) held more than "
                    f"{self.limit // (1024 * 1024):,} MB (setting code_exec_scratch_mb)"
                )
                return
