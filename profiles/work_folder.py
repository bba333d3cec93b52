"""The work folder a user names for a project: an existing folder of theirs, never Cadre's
nor the system's.

Absolute, a directory, and one the work-folder rule takes (helpers/exposure.py:
not inside nor around Cadre's folder or `usr/`, a project's work folder excepted;
not a system folder nor a home folder), so that agents told to work there cannot
rewrite Cadre, its settings, other chats, a project's settings and secrets, or
the system. The folder's real path is what is stored; it is checked again at
every use (helpers/folders.py `work_dir`).
"""

from __future__ import annotations

from pathlib import Path

from helpers.exposure import PROJECT_WORK as WORK
from helpers.exposure import saved_work_folder

__all__ = ["WORK", "check_work_folder"]


def check_work_folder(value: str, space: Path | None = None) -> str:
    """An existing folder the user names for a project of `space` (None: usr/'s), resolved;
    UserError saying why it cannot be one (another person's folder included)."""
    return saved_work_folder(value, must_exist=True, space=space)
