"""What a folder given to agents as their work folder would expose: Cadre, or the system.

Agents read and write their work folder as Cadre's own user (often root), and
the sandbox mounts it writable. So a work folder (the `work_dir` setting, a
project's named folder, the sandbox's writable folder) must not:

- hold, or lie inside, Cadre's folder, its Python environment or `usr/`;
- be a folder of the system: `/`, or anything in `/etc`, `/proc`, `/sys`,
  `/dev`, `/boot`, `/usr`, `/var`, `/bin`, `/sbin`, `/run`, `/lib*`;
- be a home folder (root's, Cadre's user's, one under /home), hold one, or lie
  in one of its hidden folders (`~/.ssh`, `~/.config`, ...: keys and start-up
  files that other programs run).

The agents' own folders in the space of the person they work for (accounts/spaces.py:
usr/ for the first admin and the desktop mode, usr/users/<name>/ for anyone else) are
excepted from all three: `<space>/workdir` and a project's `<space>/projects/<p>/work`,
wherever usr/ lies (`CADRE_USR_DIR` may put it in `~/.local/share` or `/var/lib`). Every
other folder in usr/ is refused, another person's space included: whose agents they are
is `space`, given by the caller (None: usr/'s, the desktop mode and the first admin).

The rule reads the folder's real path. It is checked when a folder is saved
(`saved_work_folder`: the settings route, profiles/work_folder.py) and at every
use (`checked_work_folder`, through helpers/folders.py `work_dir`), where a
folder that has become a link since it was saved is refused, not followed.
"""

from __future__ import annotations

import os
import pwd
import sys
from contextlib import suppress
from pathlib import Path

from helpers.errors import UserError
from helpers.files import BASE_DIR, usr_dir

#: A project's own work folder, in its folder (`<space>/projects/<name>/work`).
PROJECT_WORK = "work"
#: A person's own work folder, in their space (`<space>/workdir`).
WORKDIR = "workdir"
#: Top-level folders of the system (and every `/lib*`): none of them, nor anything in them.
SYSTEM = frozenset({"etc", "proc", "sys", "dev", "boot", "usr", "var", "bin", "sbin", "run"})
#: The words every refusal ends with: what to do instead.
INSTEAD = "choose a folder of your own"


def exposure(folder: Path, space: Path | None = None) -> str:
    """Why agents working in `folder` (resolved) would reach Cadre's own files ("is
    inside usr/", "holds Cadre's own folder", ...), "" when they would not: it holds
    Cadre's folder, its Python environment or `usr/`, or lies inside them other than in
    the work folder or a project's `work/` folder of `space` (the agents' owner's). A
    project's own folder is no work folder either: it holds the project's settings and
    secrets, which a command there would read, and rewrite to give itself another work
    folder."""
    usr = usr_dir().resolve()
    projects = _home(space) / "projects"
    if agents_own(folder, space):
        return ""
    if folder.is_relative_to(projects) and folder != projects:
        return (f"holds or is among a project's own settings and secrets (a project's"
                f" {PROJECT_WORK!r} folder may be used)")  # fmt: skip
    guarded = [(BASE_DIR.resolve(), "Cadre's own folder"), (usr, "usr/")]
    # Cadre's interpreter and packages: a tool written there runs in Cadre's process.
    guarded += [(Path(p).resolve(), "Cadre's Python environment")
                for p in {sys.prefix, sys.base_prefix}]  # fmt: skip
    for place, what in guarded:
        if folder.is_relative_to(place):
            return f"is inside {what}"
        if place.is_relative_to(folder):
            return f"holds {what}"
    return ""


def agents_own(folder: Path, space: Path | None = None) -> bool:
    """Whether `folder` (resolved) lies in the work folder of `space` (`<space>/workdir`)
    or a `work/` folder of one of its projects: the agents' own, wherever usr/ lies (in a
    hidden folder of a home, under /var/lib...). Another space's are not (None: usr/)."""
    home = _home(space)
    if folder.is_relative_to(home / WORKDIR):
        return True
    projects = home / "projects"
    inner = folder.relative_to(projects).parts if folder.is_relative_to(projects) else ()
    return len(inner) >= 2 and inner[1] == PROJECT_WORK


def _home(space: Path | None) -> Path:
    """The real path of `space` (None: usr/, the desktop mode's and the first admin's)."""
    return (space if space is not None else usr_dir()).resolve()


def _homes() -> dict[Path, str]:
    """Home folders (real path → whose): root's, Cadre's user's, and those under /home."""
    found: dict[Path, str] = {}
    for uid in {0, os.getuid()}:
        with suppress(KeyError):  # a uid without a passwd entry (some containers)
            entry = pwd.getpwuid(uid)
            found[Path(entry.pw_dir).resolve()] = f"{entry.pw_name}'s"
    if os.environ.get("HOME"):
        found.setdefault(Path(os.environ["HOME"]).resolve(), "Cadre's user's")
    with suppress(OSError):
        for entry in os.scandir("/home"):
            if entry.is_dir():
                found.setdefault(Path(entry.path).resolve(), f"{entry.name}'s")
    return {home: whose for home, whose in found.items() if home != Path("/")}


def system_folder(folder: Path) -> str:
    """Why `folder` (resolved) is the system's, "" when it is not (see the docstring)."""
    if folder == Path("/"):
        return "is the root of the file system (a system folder)"
    top = folder.parts[1]
    if top in SYSTEM or top.startswith("lib"):
        where = "is" if folder == Path("/", top) else "is inside"
        return f"{where} the system folder /{top}"
    for home, whose in _homes().items():
        if folder == home:
            return f"is {whose} home folder"
        if home.is_relative_to(folder):
            return f"holds {whose} home folder ({home})"
        if folder.is_relative_to(home) and folder.relative_to(home).parts[0].startswith("."):
            hidden = home / folder.relative_to(home).parts[0]
            return f"is inside {hidden}, a hidden folder of {whose} home folder (settings, keys)"
    return ""


def problem(folder: Path, space: Path | None = None) -> str:
    """Why `folder` (resolved) cannot be a work folder of agents working for the owner of
    `space`, "" when it can (their own folders in usr/ always can: what holds usr/ is
    Cadre's installer's choice)."""
    if agents_own(folder, space):
        return ""
    return system_folder(folder) or exposure(folder, space)


def saved_work_folder(value: str, must_exist: bool = True, space: Path | None = None) -> str:
    """`value` checked to be saved as a work folder of `space`'s owner: its real path (""
    for ""); UserError saying why it cannot be one (`must_exist`: it must be an existing
    folder already)."""
    text = value.strip()
    if not text:
        return ""
    path = expanded(text)
    if not path.is_absolute():
        raise UserError(f"work folder {text!r}: give the full path (from /)")
    try:
        real = path.resolve()
        exists, is_dir = real.exists(), real.is_dir()
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long, a link loop
        raise UserError(f"work folder {text[:200]!r} cannot be a folder: {exc}"[:400]) from None
    if must_exist and not exists:
        raise UserError(f"work folder {text!r} does not exist")
    if exists and not is_dir:
        raise UserError(f"work folder {text!r} is not a folder")
    why = problem(real, space)
    if why:
        raise UserError(f"work folder {text!r} {why}: {INSTEAD}")
    return str(real)


def expanded(text: str) -> Path:
    """The work folder `text` names, `~` and `~user` made full; UserError when its `~` names
    no user of this machine (pathlib's RuntimeError)."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        raise UserError(f"work folder {text[:200]!r}: its '~' names no user of this machine;"
                        " give the full path (from /)") from None  # fmt: skip


def checked_work_folder(given: Path, space: Path | None = None) -> Path:
    """The real path of the work folder `given` (as a setting names it, or
    `<space>/workdir`), at the moment the agents of `space`'s owner use it; UserError when
    it cannot be used: it is a link now (a folder swapped for a link after it was saved:
    not followed), or the rule refuses it (another person's folder included)."""
    path = given if given.is_absolute() else Path.cwd() / given
    try:
        link = path.is_symlink()
        real = path.resolve()
    except (OSError, ValueError) as exc:
        raise UserError(f"the work folder {str(path)[:200]!r} cannot be used: {exc}") from None
    fix = ("set another work folder in Settings (work_dir), or in the project's settings"
           " if the chat belongs to a project")  # fmt: skip
    if link:
        raise UserError(f"the work folder {path} is a link now (to {real}), which agents are"
                        f" never given: make it a folder again, or {fix}")  # fmt: skip
    why = problem(real, space)
    if why:
        raise UserError(f"the work folder {real} {why}: agents cannot work there; {fix}")
    return real
