"""Where the file panel may look: the work folder or a chat's folder, and paths inside them.

A path from the page is always named from its folder down (`notes/a.md`); it
goes through `helpers/confine.py` like every path an agent names, so what the
agents may not reach the panel may not reach either: `..`, encoded dots, links
leading out. An absolute path is refused outright: the panel never writes one,
so one that arrives was typed to reach elsewhere.

The chat's folder is read-only here, as it is for the agents: it is Cadre's
record of the chat (its chat.json, saved results, attachments), and a change
made behind the chat's back could break it. Changes are refused too where they
would touch Cadre's own secret files (a work folder set to a folder holding
`usr/`) or the folder itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from helpers.confine import PROTECTED, PathRefused, check_name, inside, resolve_inside
from helpers.errors import UserError
from helpers.files import usr_path
from helpers.folders import chat_dir, work_dir

Root = Literal["work", "chat"]


class Refused(UserError):
    """A path or a change the panel refuses; the words say why (a 400)."""


class TooBig(Refused):
    """An upload larger than the setting allows (the upload route answers 413)."""


@dataclass(frozen=True)
class Place:
    """One folder the panel shows: its real path, its name for people, whether it changes."""

    root: Root
    folder: Path
    label: str
    writable: bool

    def resolve(self, raw: str) -> Path:
        """The real path `raw` (relative, "" for the folder itself) names inside the folder."""
        text = raw.strip()
        if text.startswith("/"):
            raise Refused(
                f"{raw!r} is an absolute path; name it from {self.label} down (e.g. notes/a.md)"
            )
        text = text.rstrip("/")
        if text in ("", "."):
            return self.folder
        if text.startswith("~"):
            text = f"./{text}"  # a name here ("~draft.md"), not someone's home folder
        try:
            return resolve_inside(text, self.folder, what=self.label)
        except PathRefused as exc:
            raise Refused(f"path refused: {exc}") from None

    def entry(self, raw: str) -> Path:
        """The entry `raw` names itself, not what a link there points to: its folder is
        resolved (and must be inside), its last part kept as is. A link whose target is
        outside is refused all the same (resolving the whole path checks it); a link that
        loops points nowhere, so it is taken as itself (to be deleted or renamed)."""
        name = Path(raw.strip().rstrip("/"))
        own = self.resolve(str(name.parent)) / name.name
        if own.is_symlink() and _loops(own):
            return own
        real = self.resolve(raw)
        if real == self.folder:
            raise Refused(
                f"{self.label} itself cannot be changed here; pick a file or folder in it"
            )
        return own

    def relative(self, real: Path) -> str:
        """`real` named from the folder down, as the page shows it."""
        return real.relative_to(self.folder).as_posix() if real != self.folder else ""

    def check_writable(self) -> None:
        """Refuse any change in a read-only place (new files included)."""
        if not self.writable:
            raise Refused(f"{self.label} is read-only here: browse and download its files")

    def check_change(self, target: Path) -> None:
        """Refuse a change to `target` in a read-only place, or when `target` is or holds
        one of Cadre's secret files."""
        self.check_writable()
        for name in PROTECTED:
            secret = usr_path(name)
            if secret.exists() and inside(secret.resolve(), [target]):
                raise Refused(
                    f"{self.relative(target) or self.label} is or holds one of Cadre's own"
                    " files (settings, session key), which the file panel never changes"
                )


def _loops(link: Path) -> bool:
    """True for a link that leads back to itself (Python 3.11 raises RuntimeError)."""
    try:
        link.resolve()
    except (RuntimeError, OSError):
        return True
    return False


def new_name(raw: str) -> str:
    """A file or folder name typed by the user: one name, no folders, nothing sneaky."""
    name = raw.strip()
    if not name or name in (".", ".."):
        raise Refused("give a name (letters, digits, dots, dashes…)")
    if "/" in name:
        raise Refused(f"{name!r} contains '/': give a name, not a path")
    if len(name.encode()) > 255:
        raise Refused("the name is too long (255 bytes at most)")
    try:
        check_name(name)
    except PathRefused as exc:
        raise Refused(f"name refused: {exc}") from None
    return name


def place(
    root: str, chat_id: str, work_setting: str, chat_exists: bool, space: Path | None = None
) -> Place:
    """The folder `root` names: "work" (the work folder of the agents of `space`'s owner,
    the asker) or "chat" (`chat_id`'s, the asker's chat)."""
    if root == "work":
        folder = work_dir(work_setting, space)
        folder.mkdir(parents=True, exist_ok=True)
        return Place("work", folder.resolve(), "the work folder", True)
    if root == "chat":
        if not chat_id or not chat_exists:
            raise Refused("open a chat first: its folder is shown for the chat that is open")
        return Place("chat", chat_dir(chat_id).resolve(), "this chat's folder", False)
    raise Refused(f"unknown folder {root!r}: use 'work' or 'chat'")
