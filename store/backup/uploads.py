"""Backups uploaded from the page, kept for their restore, and never left behind.

An upload waits in `usr/` as `.backup-upload-<token>.zip` between its preview and
its restore (inside `usr/`: a 4 GB backup is not copied into a small /tmp). Each
running app keeps its uploads on an `UploadShelf`: one waits at a time (a new
upload replaces it), and a file is removed only once nothing uses it, so a new
upload never takes away the one a restore is reading (two tabs, two threads).

A process killed (SIGKILL, a crash) before its restore ended leaves its upload
behind. `sweep` removes every upload at the next start, from `swap.recover`: only
while it holds `usr/` exclusively, which it cannot while any Cadre runs on it
(each holds `usr/` shared for its whole life, swap.py), so an upload of a live
process, waiting or being restored, is never swept by another process starting.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from helpers.errors import NotFound
from helpers.files import usr_dir

log = logging.getLogger(__name__)

PREFIX = ".backup-upload-"
_CHUNK = 1024 * 1024


def upload_path(token: str) -> Path:
    return usr_dir() / f"{PREFIX}{token}.zip"


def left_behind() -> list[Path]:
    """The uploads in `usr/` (call `sweep` only where no process can still want them)."""
    root = usr_dir()
    return sorted(root.glob(f"{PREFIX}*.zip")) if root.is_dir() else []


def sweep() -> list[str]:
    """Remove every upload in `usr/`; their names, for the log. Only for `swap.recover`,
    which holds `usr/` exclusively: no running process has an upload then."""
    removed = []
    for path in left_behind():
        path.unlink(missing_ok=True)
        removed.append(path.name)
    if removed:
        log.warning("removed %d backup upload(s) left by a Cadre that stopped before its"
                    " restore: %s", len(removed), ", ".join(removed))  # fmt: skip
    return removed


class UploadShelf:
    """This app's uploads: the one waiting for its restore, and those in use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: str | None = None
        #: Token → how many requests read its file now (a preview, a restore).
        self._users: dict[str, int] = {}

    @contextmanager
    def taking(self, stream: BinaryIO) -> Iterator[tuple[str, Path]]:
        """Write an upload and hold it while the block reads it (its preview); its token
        and file. The upload that waited before goes, once nothing reads it."""
        token = secrets.token_urlsafe(12)
        path = upload_path(token)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            earlier, self._waiting = self._waiting, token
            self._users[token] = 1
        self._release_if_unused(earlier)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as sink:
                shutil.copyfileobj(stream, sink, _CHUNK)
            yield token, path
        except BaseException:
            self.forget(token)  # refused at its preview, or cut short: it waits for nothing
            raise
        finally:
            self._leave(token)

    @contextmanager
    def using(self, token: str) -> Iterator[Path]:
        """The upload's file, kept while the block reads it; NotFound when it is gone
        (restored, replaced, or from before Cadre started again)."""
        path = upload_path(token)
        with self._lock:
            if (token != self._waiting and token not in self._users) or not path.is_file():
                raise NotFound("that backup is no longer here: upload it again")
            self._users[token] = self._users.get(token, 0) + 1
        try:
            yield path
        finally:
            self._leave(token)

    def forget(self, token: str) -> None:
        """The upload is done with (restored, or refused at its preview): its file goes as
        soon as nothing reads it."""
        with self._lock:
            if self._waiting == token:
                self._waiting = None
        self._release_if_unused(token)

    def _leave(self, token: str) -> None:
        with self._lock:
            count = self._users.get(token, 0) - 1
            if count > 0:
                self._users[token] = count
                return
            self._users.pop(token, None)
        self._release_if_unused(token)

    def _release_if_unused(self, token: str | None) -> None:
        if token is None:
            return
        with self._lock:
            if token == self._waiting or token in self._users:
                return
            # Removed under the lock: a `using` of this token cannot start meanwhile.
            upload_path(token).unlink(missing_ok=True)
