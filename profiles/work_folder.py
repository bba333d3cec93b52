"""The work folder a user names for a project: an existing folder of theirs, never Cadre's.

Absolute, a directory, and neither inside nor around Cadre's own folder or
`usr/` (a project's work folder under `usr/projects/` excepted), so that agents
told to work there cannot rewrite Cadre, its settings or other chats. A
project's own folder is not one either: it holds the project's settings and
secrets, which a command there would read, and rewrite to give itself another
work folder (in the sandbox too: the work folder is what a command may write).
"""

from __future__ import annotations

from pathlib import Path

from helpers.errors import UserError
from helpers.files import BASE_DIR, usr_dir, usr_path

#: A project's own work folder, in its folder (profiles/projects.py uses this name).
WORK = "work"


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
    projects = usr_path("projects").resolve()
    if real.is_relative_to(projects) and real != projects:
        inner = real.relative_to(projects).parts
        if len(inner) >= 2 and inner[1] == WORK:
            return str(real)  # in a project's work folder: its own files, not Cadre's
        raise UserError(
            f"work folder {text!r} holds or is among a project's own settings and secrets:"
            f" choose a folder of your own, or one inside a project's {WORK!r} folder"
        )
    for guarded, what in (
        (BASE_DIR.resolve(), "Cadre's own folder"),
        (usr_dir().resolve(), "usr/"),
    ):
        if real.is_relative_to(guarded):
            raise UserError(f"work folder {text!r} is inside {what}: choose a folder of your own")
        if guarded.is_relative_to(real):
            raise UserError(f"work folder {text!r} holds {what}: choose a folder of your own")
    return str(real)
