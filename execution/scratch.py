"""A sandboxed session's scratch space: its /tmp, /var/tmp, /dev/shm and home, on disk, limited.

Empty folders in memory (tmpfs) would be simplest, but each could grow to half
the machine's memory, and what a command wrote there (2.5 GB in a probe) stayed
in memory until the chat was reset. So each session gets a folder of its own
on disk, under `usr/scratch/`, removed when the session ends. Its name starts
with Cadre's pid and start time: a folder whose Cadre is gone (killed) is
removed when the next one is made.

No file system Cadre may use without root gives a folder a size of its own, so
the size is watched instead (`Watch`): the folder's blocks are counted every
`INTERVAL` seconds (less often when a count takes long: `BUSY_SHARE`), and a
session past its limit is stopped and its agent told why. A command writing
faster than the count sees may go past the limit for that moment; the session
is then stopped and the space given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from execution.process_tree import start_time
from helpers.files import usr_path

log = logging.getLogger(__name__)

#: Seconds between two counts of a session's scratch space, at least.
INTERVAL = 0.5
#: Share of Cadre's time one space's counts may take: after a count that took long (a space
#: of 100,000 small files: 0.36 s, which twice a second kept Cadre at 45 % of a core), the
#: pause before the next grows to keep to it.
BUSY_SHARE = 0.1
#: Entries counted at most in one count: a folder holding more counts as full (a count
#: that never ends would let the space grow unseen).
MOST_ENTRIES = 200_000
#: The folders of one scratch space, each shown at its place in the sandbox.
FOLDERS = ("tmp", "var-tmp", "shm", "home")


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
        # /tmp's usual mode (anyone writes, each keeps their own) for all but the home.
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


#: What `used` says of a space it cannot count: more than any limit.
UNCOUNTABLE = 1 << 62


def used(path: Path) -> int:
    """Bytes of disk the folder's files take (their blocks: a sparse file counts as what it
    holds); past `MOST_ENTRIES` entries, or with a folder that stays closed to the count,
    more than any limit."""
    total, seen, todo = 0, 0, [str(path)]
    while todo:
        folder = todo.pop()
        with _let_in(folder) as opened:
            if not opened:
                return UNCOUNTABLE
            try:
                entries = os.scandir(folder)
            except FileNotFoundError:  # removed meanwhile
                continue
            except OSError:
                return UNCOUNTABLE
            with entries:
                for entry in entries:
                    seen += 1
                    if seen > MOST_ENTRIES:
                        return UNCOUNTABLE
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    except OSError:
                        return UNCOUNTABLE
                    total += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        todo.append(entry.path)
    return total


@contextlib.contextmanager
def _let_in(folder: str) -> Iterator[bool]:
    """Whether `folder` can be read and searched, opened to Cadre's user meanwhile if need
    be: where Cadre is not root, the sandbox's files are that user's own, and `chmod 000`
    on a folder kept 300 MB out of the count. Its mode is given back afterwards, through a
    descriptor of the folder itself (never a link put in its place)."""
    opened = not os.geteuid() or os.access(folder, os.R_OK | os.X_OK, follow_symlinks=False)
    if opened:
        yield True
        return
    try:
        handle = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield True  # removed meanwhile: nothing to count, as scandir finds
        return
    except OSError:
        yield False
        return
    itself = f"/proc/self/fd/{handle}"
    try:
        mode = stat.S_IMODE(os.stat(handle).st_mode)
        os.chmod(itself, mode | stat.S_IRUSR | stat.S_IXUSR)
    except OSError:  # not Cadre's user's own: nothing more it may do
        os.close(handle)
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            os.chmod(itself, mode)
        os.close(handle)


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
        pause = INTERVAL
        while True:
            await asyncio.sleep(pause)
            began = time.monotonic()
            size = await asyncio.to_thread(used, self.path)
            pause = max(INTERVAL, (time.monotonic() - began) * (1 / BUSY_SHARE - 1))
            if size > self.limit:
                log.info("a code session's scratch space %s is over its limit", self.path)
                self._task = None
                held = (
                    f"more than {MOST_ENTRIES:,} files or a folder Cadre could not count"
                    if size >= UNCOUNTABLE
                    else f"more than {self.limit // (1024 * 1024):,} MB"
                )
                self._over(
                    f"its scratch space (/tmp, /var/tmp, /dev/shm and its home) held {held}"
                    " (setting code_exec_scratch_mb)"
                )
                return
