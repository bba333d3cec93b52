"""The copies a page's parts are read from: checked bytes in a folder of Cadre's own.

A picture, script or style sheet of a local page is read by Chromium itself,
so that its rules for files hold (browsing/local_files.py says why), but from
a copy of the bytes Cadre read and checked, never from the file the page
named. The copies live in the chat's `browser/files/`, which no agent can
write. A copy is named by its content's hash (a page asking for one file a
thousand times makes one copy, and a name always holds what it says) and
goes once unused for a while, or sooner when the copies grow past a bound;
all go when the chat's browser closes.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Seconds a copy is kept after its last use: Chromium opens it at once (a copy gone
#: before that would only be a missing picture).
KEPT_FOR = 30.0
#: Most bytes the copies may hold at once; past it the least recently used go.
BYTES_KEPT = 256 * 1024 * 1024
#: A suffix kept on a copy, for Chromium's guess of its type (".css" must stay ".css").
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}")


class FileCopies:
    """The copies of one chat's browser (their folder, and when each was last used)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        #: Each copy present: when it was last handed out, and its size.
        self._used: dict[Path, tuple[float, int]] = {}
        self._lock = threading.Lock()  # copies are made in worker threads, several at once

    def keep(self, body: bytes, url: str) -> Path:
        """A copy holding `body`, named with the suffix of `url`'s file so that Chromium
        guesses its type as it would have for that file."""
        suffix = Path(unquote(urlsplit(url).path)).suffix
        name = hashlib.sha256(body).hexdigest()[:32] + (suffix if _SUFFIX.fullmatch(suffix) else "")
        path = self.folder / name
        with self._lock:
            if path not in self._used or not path.exists():
                self._write(path, body)
            self._used[path] = (time.monotonic(), len(body))
            self._forget_old(but=path)
        return path

    def clear(self) -> None:
        """Every copy gone (the browser closed: nothing is left to read one)."""
        with self._lock:
            self._used.clear()
            shutil.rmtree(self.folder, ignore_errors=True)

    def _write(self, path: Path, body: bytes) -> None:
        """Written whole under another name first: a copy's name only ever shows all of it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.urandom(4).hex()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(partial, path)

    def _forget_old(self, but: Path) -> None:
        """The copies unused for KEPT_FOR seconds gone, and the least recently used while
        they hold more than BYTES_KEPT; never `but`, just handed out."""
        now = time.monotonic()
        total = sum(size for _, size in self._used.values())
        for path, (used, size) in sorted(self._used.items(), key=lambda item: item[1][0]):
            if path == but or (now - used < KEPT_FOR and total <= BYTES_KEPT):
                break  # the rest were used later still
            path.unlink(missing_ok=True)
            del self._used[path]
            total -= size
