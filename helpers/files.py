"""Where Cadre's files live: the project folder and the user's `usr/` folder.

`usr/` holds everything a user owns (settings, chats, profiles, work folder).
`CADRE_USR_DIR` moves it as a whole; tests point it at a temporary folder.
The environment is read on every call so that a change (a test's monkeypatch,
a settings reload) is seen without restarting anything.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path

#: The project folder: the one holding `agent.py`, `prompts/`, `tools/`, `agents/`.
BASE_DIR = Path(__file__).resolve().parent.parent


def usr_dir() -> Path:
    """The user data folder (`usr/` beside the code unless `CADRE_USR_DIR` says otherwise)."""
    return _resolved(os.environ.get("CADRE_USR_DIR", ""))


@lru_cache(maxsize=16)
def _resolved(override: str) -> Path:
    # Resolving costs a stat per path component, and this is asked on every step.
    override = override.strip()
    return Path(override).expanduser().resolve() if override else BASE_DIR / "usr"


def usr_path(*parts: str) -> Path:
    """A path inside the user data folder."""
    return _joined(usr_dir(), parts)


@lru_cache(maxsize=256)
def _joined(folder: Path, parts: tuple[str, ...]) -> Path:
    # Paths are asked for many times a step (settings, profiles, projects), and making
    # one costs microseconds of parsing: the few dozen in use are kept.
    return folder.joinpath(*parts)


def base_path(*parts: str) -> Path:
    """A path inside the project folder."""
    return BASE_DIR.joinpath(*parts)


def write_text_atomic(
    path: Path, text: str, mode: int | None = None, *, fsync: bool = True
) -> None:
    """Write `text` (UTF-8) so that readers see either the old file or the whole new one
    (`write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"), mode, fsync=fsync)


def write_bytes_atomic(
    path: Path, data: bytes, mode: int | None = None, *, fsync: bool = True
) -> None:
    """Write `data` so that readers see either the old file or the whole new one.

    The temporary file lives in the same folder (same file system) so
    `os.replace` is atomic; it is fsynced first so a crash cannot leave an
    empty file behind a completed rename. `fsync=False` is for a file that may
    be rebuilt when a crash of the machine empties it (a cache): it saves a
    disk flush (some milliseconds) and still never shows half a file to a
    process that outlives the writer.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
