"""The work folder a user names for a project: an existing folder of theirs, never Cadre's.

Absolute, a directory, and neither inside nor around Cadre's own folder or
`usr/` (a project's work folder, `usr/projects/<name>/work/`, excepted), so that agents told
to work there cannot rewrite Cadre, its settings or other chats.
"""

from __future__ import annotations

from pathlib import Path

from helpers.errors import UserError
from helpers.files import BASE_DIR, usr_dir, usr_path

#: A project's own work folder under its folder (profiles/projects.py names it too: it
#: imports this module, so the name is kept here).
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
    inner = real.relative_to(projects).parts if real.is_relative_to(projects) else ()
    if len(inner) >= 2 and inner[1] == WORK:
        # A project's work folder (shared with another project): its files, not Cadre's.
        # The project's folder itself is not: it holds its settings.json and secrets.json.
        return str(real)
    for guarded, what in (
        (BASE_DIR.resolve(), "Cadre's own folder"),
        (usr_dir().resolve(), "usr/"),
    ):
        if real.is_relative_to(guarded):
            raise UserError(f"work folder {text!r} is inside {what}: choose a folder of your own")
        if guarded.is_relative_to(real):
            raise UserError(f"work folder {text!r} holds {what}: choose a folder of your own")
    return str(real)
