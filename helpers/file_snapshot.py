"""One view of some folders and files: each listed or stat'ed once, and checkable later.

An agent's system prompt renders some twenty prompt files looked up through
three or four folders, plus the tool folders, on every step. Done with a stat
per candidate, those lookups were most of the framework's own time per step.
Inside ``with snapshot() as seen:`` a folder is listed once and a file stat'ed
once, however often they are asked for; afterwards ``seen.unchanged()`` tells,
with one stat per folder and file, whether anything the block looked at has
changed, so a result built from them can be reused.

Files are edited in place (the file's own mtime and size change) or saved by
rename and added or removed (the folder's mtime changes), so both are kept.
Timestamps come from a coarse clock: a change within the same tick as the
reading can keep the same mtime. So a view is not trusted while anything it
saw changed less than `RACY_SECONDS` before it was taken (git's "racy" rule).

An agent's step is one look (``with one_look():``): inside it, an answer of `Answers`
checked once, a folder listed once and what else `looked_up` reads stand for the rest of
the step, for at most LOOK_SECONDS. A step asks which plugins, profiles and tools there are
dozens of times within milliseconds; one that waits (a model's reply, a pause, a tool held
for approval) looks again afterwards, so a plugin switched off meanwhile is seen before the
tool call.

Cadre's own prompts, tools, profiles, skills and shipped plugins (`PROGRAM_FOLDERS`)
change only with a new version, which means a restart: they are read like the rest but
not checked again, which halves the cost of a check. Everything a user or a
plugin adds or overrides lives elsewhere and is checked.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from helpers.errors import UserError
from helpers.files import base_path

__all__ = [
    "Answers",
    "FileStamp",
    "Seen",
    "current",
    "folder_names",
    "is_checked",
    "is_folder",
    "looked_up",
    "named_folders",
    "one_look",
    "regular_file",
    "stamp_of",
    "settled",
    "snapshot",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: A view that saw something changed this recently is never reused.
RACY_SECONDS = 2.0

#: Folders of the installed program, not checked again (see above).
PROGRAM_FOLDERS = tuple(
    base_path(name) for name in ("prompts", "tools", "agents", "skills", "plugins")
)
_PROGRAM_PREFIXES = tuple(f"{folder}{os.sep}" for folder in PROGRAM_FOLDERS)


def is_checked(path: str) -> bool:
    """False for a path inside Cadre's own folders (`PROGRAM_FOLDERS`): not checked again."""
    return not f"{path}{os.sep}".startswith(_PROGRAM_PREFIXES)


class FileStamp(NamedTuple):
    """What changes when a file is edited, replaced or copied over (as git compares)."""

    mtime_ns: int
    size: int
    inode: int
    ctime_ns: int


#: What is compared: (file type and mode, then the FileStamp fields); None when missing.
_Stamp = tuple[int, int, int, int, int] | None


#: The listings and stamps of Cadre's own folders and files, read once (they change only
#: with a new version); bounded, as a path asked for may be missing (a profile without a
#: `tools/`).
PROGRAM_PATHS_KEPT = 4096
_program_listings: dict[str, frozenset[str]] = {}
_program_stamps: dict[str, _Stamp] = {}


def stamp_of(path: str) -> _Stamp:
    """(mode, mtime_ns, size, inode, ctime_ns) of `path`, None when it is not there; Cadre's
    own files are stat'ed once."""
    if path in _program_stamps:
        return _program_stamps[path]
    try:
        st = os.stat(path)
    except OSError:  # missing, a link to nowhere or a loop, not ours to read: not there
        found = None
    else:
        found = st.st_mode, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns
    if not is_checked(path) and len(_program_stamps) < PROGRAM_PATHS_KEPT:
        _program_stamps[path] = found  # Cadre's own files: read once (see the top)
    return found


def settled(stamp: FileStamp) -> bool:
    """True when the file was last changed long enough ago for its stamp to be trusted.

    A cache keyed by a stamp must not keep what it read from an unsettled file:
    an edit within the same clock tick could leave the stamp as it was.
    """
    return stamp.mtime_ns < time.time_ns() - int(RACY_SECONDS * 1e9)


class Seen:
    """Everything one snapshot looked at, with the stamps it had then."""

    def __init__(self) -> None:
        self.taken_at = time.time_ns()
        #: Set when its block ends: work the block started later reads the files afresh.
        self.closed = False
        self._stamps: dict[str, _Stamp] = {}
        self._names: dict[Path, frozenset[str]] = {}
        self._folder_stamps: dict[Path, _Stamp] = {}
        self._files: dict[Path, _Stamp] = {}
        self._checks: list[Callable[[object], bool]] = []

    def depends_on(self, check: Callable[[object], bool]) -> None:
        """Another input than files: `unchanged(subject)` also asks `check(subject)` (True:
        still the same). The subject is whom the answer is for now (None: whom it was for)."""
        self._checks.append(check)

    def names(self, folder: Path) -> frozenset[str]:
        names = self._names.get(folder)
        if names is None:
            key = str(folder)
            # Stamp first: a change between the two reads leaves an older stamp,
            # so the next check sees a difference, never the reverse.
            self._folder_stamps[folder] = stamp = stamp_of(key)
            if is_checked(key):
                self._stamps[key] = stamp
            names = _listing(key)
            self._names[folder] = names
        return names

    def stamp_of_folder(self, folder: Path) -> _Stamp:
        """The stamp `folder` had when it was listed (list it first)."""
        return self._folder_stamps[folder]

    def file(self, path: Path) -> _Stamp:
        if path in self._files:
            return self._files[path]
        # A name the folder's listing lacks needs no stat: most lookups are misses.
        found = None
        if path.name in self.names(path.parent):
            key = str(path)
            found = stamp_of(key)
            if is_checked(key):
                self._stamps[key] = found
        self._files[path] = found
        return found

    def unchanged(self, subject: object = None) -> bool:
        """True when every folder and file seen is as it was (and none was racy then),
        and every other input is too, asked for `subject` (see `depends_on`)."""
        racy_from = self.taken_at - int(RACY_SECONDS * 1e9)
        for path, was in self._stamps.items():
            if was is not None and was[1] >= racy_from:
                return False
            if stamp_of(path) != was:
                return False
        return all(check(subject) for check in self._checks)


_current: ContextVar[Seen | None] = ContextVar("file_snapshot", default=None)


@contextmanager
def snapshot() -> Iterator[Seen]:
    """Within this block, folders and files are read in one view.

    A block inside another keeps its own record, and the outer one does not
    learn what the inner one read: what the inner block computed reaches the
    outer record as an input of its own (see `Seen.depends_on`).
    """
    seen = Seen()
    token = _current.set(seen)
    try:
        yield seen
    finally:
        seen.closed = True  # a task or thread started inside may still hold the context
        _current.reset(token)


def current() -> Seen | None:
    """The snapshot in effect, if any."""
    seen = _current.get()
    return None if seen is None or seen.closed else seen


#: Seconds a look stands for (see the top): longer than the framework's own work in a
#: step, shorter than a model's reply.
LOOK_SECONDS = 0.5


class Look:
    """What one step has looked at (see the top): answers checked, listings, stamps."""

    def __init__(self) -> None:
        #: Set when its step ends: a task started inside it may still hold the context.
        self.closed = False
        self.until = time.monotonic() + LOOK_SECONDS
        self.found: dict[Hashable, object] = {}

    def fresh(self) -> bool:
        """Still standing: its step goes on and it is young enough; else it is let go."""
        if self.closed:
            return False
        if time.monotonic() < self.until:
            return True
        self.closed = True  # once stale, for good: a new look starts nowhere mid-step
        return False


_look: ContextVar[Look | None] = ContextVar("one_look", default=None)


@contextmanager
def one_look() -> Iterator[Look]:
    """One step's look at folders and files (see the top); a look inside it is its own."""
    look = Look()
    token = _look.set(look)
    try:
        yield look
    finally:
        look.closed = True
        _look.reset(token)


def current_look() -> Look | None:
    """The step's look in effect, if any."""
    look = _look.get()
    return look if look is not None and look.fresh() else None


def looked_up(key: Hashable, read: Callable[[], T]) -> T:
    """`read()`, once a step for `key` (each time outside a step)."""
    look = current_look()
    if look is None:
        return read()
    if key not in look.found:
        look.found[key] = read()
    return look.found[key]  # type: ignore[return-value]


def folder_names(folder: Path) -> frozenset[str]:
    """Names in `folder` (empty when it is missing), through the snapshot when there is one
    (else once a step)."""
    seen = current()
    if seen is not None:
        return seen.names(folder)
    key = str(folder)
    return looked_up(("names", key), lambda: _listing(key))


def _listing(path: str) -> frozenset[str]:
    names = _program_listings.get(path)
    if names is not None:
        return names
    try:
        names = frozenset(os.listdir(path))
    except OSError:  # missing, or not a folder: it holds nothing
        names = frozenset()
    if not is_checked(path) and len(_program_listings) < PROGRAM_PATHS_KEPT:
        _program_listings[path] = names
    return names


def is_folder(path: Path) -> bool:
    """True when `path` is a folder, through the snapshot when there is one."""
    seen = current()
    if seen is None:
        return path.is_dir()
    seen.names(path)  # stamps the path itself
    found = seen.stamp_of_folder(path)
    return found is not None and stat.S_ISDIR(found[0])


def regular_file(path: Path) -> FileStamp | None:
    """The stamp of a regular file at `path`; None when there is none."""
    seen = current()
    found = seen.file(path) if seen is not None else stamp_of(str(path))
    if found is None or not stat.S_ISREG(found[0]):
        return None
    return FileStamp(*found[1:])


def named_folders(
    folder: Path, check: Callable[[str], str], what: str
) -> Iterator[tuple[str, Path]]:
    """(name, path) of each sub-folder of `folder`, sorted, through the snapshot: hidden
    ones (".", "_") left out, and one whose name `check` refuses (UserError) logged and
    left out. How profiles and skills are found in each of their sources."""
    for entry in sorted(folder_names(folder)):
        root = folder / entry
        if entry.startswith((".", "_")) or not is_folder(root):
            continue
        try:
            yield check(entry), root
        except UserError:
            log.warning("ignoring %s folder with an unusable name: %s", what, root)


class Answers(Generic[T]):
    """Answers worked out from folders and files, each reused while everything it was read
    from is unchanged (one `Seen` per answer).

    Keys may come from outside (a project's name), so at most `kept` answers are kept,
    the oldest dropped first. Flask's threads and the agents' loop ask at once.
    """

    def __init__(self, kept: int = 32) -> None:
        self.kept = kept
        self._answers: dict[Hashable, tuple[Seen, T]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, work: Callable[[], T]) -> T:
        """The answer for `key`: the kept one while its inputs are unchanged, else `work()`;
        checked once a step (see `one_look`)."""
        look = current_look()
        if look is not None and (self, key) in look.found:
            return look.found[(self, key)]  # type: ignore[return-value]
        cached = self._answers.get(key)
        if cached is not None and cached[0].unchanged():
            found = cached[1]
        else:
            with snapshot() as seen:
                found = work()
            with self._lock:
                self._answers.pop(key, None)
                while len(self._answers) >= self.kept:
                    self._answers.pop(next(iter(self._answers)))  # the oldest answer
                self._answers[key] = (seen, found)
        if look is not None:
            look.found[(self, key)] = found
        return found

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()

    def __len__(self) -> int:
        return len(self._answers)
