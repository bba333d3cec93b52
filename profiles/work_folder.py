"""The work folder a user names for a project: an existing folder of theirs, never Cadre's.

Absolute, a directory, and one that does not expose Cadre's own files
(`helpers.folders.exposure`: not inside nor around Cadre's folder or `usr/`, a
project's work folder excepted), so that agents told to work there cannot rewrite
Cadre, its settings, other chats or a project's settings and secrets.
"""

from __future__ import annotations

from pathlib import Path

from helpers.errors import UserError
from helpers.folders import PROJECT_WORK as WORK
from helpers.folders import exposure

__all__ = ["WORK", "check_work_folder"]


def check_work_folder(value: str) -> str:
    """An existing folder the user names, resolved; UserError saying why it cannot be one."""
    text = value.strip()
    if not text:
        return ""
    path = Path(text).expanduser()
    if not path.is_absolute():
        raise UserError(f"work folder {text!r}: give the full path (from /)")
    try:
        real = path.resolve()
        exists, is_dir = real.exists(), real.is_dir()
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long, a link loop
        raise UserError(f"work folder {text[:200]!r} cannot be a folder: {exc}"[:400]) from None
    if not exists:
        raise UserError(f"work folder {text!r} does not exist")
    if not is_dir:
        raise UserError(f"work folder {text!r} is not a folder")
    problem = exposure(real)
    if problem:
        raise UserError(f"work folder {text!r} {problem}: choose a folder of your own")
    return str(real)
