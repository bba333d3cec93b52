"""Where each person's things live: their space, a folder under usr/.

The first admin's space is usr/ itself (the one-person install's folders: upgrading
moves nothing); every other user's is usr/users/<name>/. Inside a space the layout is
the same for everyone (helpers/folders.py names it): the work folder, memory,
knowledge, projects and notifications. In the desktop mode (no account) the only
space is usr/. Chats are kept together in usr/chats/, and scheduled tasks in
usr/scheduler/tasks.json, each with its owner on record (store/chats.py and
scheduler/owners.py show each person only their own).
"""

from __future__ import annotations

from pathlib import Path

from accounts.users import Users, clean_name
from helpers.files import usr_dir, usr_path

#: The folder under usr/ that holds every other user's space.
USERS_DIR = "users"
#: What a space holds of its owner's alone (helpers/folders.py's layout, and what was handed
#: over to them): usr/ holds these for the first admin, beside what is everyone's there
#: (the chats, the settings, the accounts, the other spaces).
OWN_THINGS = ("workdir", "memory", "knowledge", "projects", "handed-over", "notifications.json")

#: A reader of usr/users.json (wherever usr/ is when asked), read again only when the
#: file changed: the run context asks on every use of a person's folders.
_users = Users()


def is_member(owner: str | None) -> bool:
    """Is `owner` a member (not an admin)? No for None (the desktop mode's one person) and
    for a name no account has: nothing is held back from a chat whose owner is unknown
    to the accounts only because they were deleted (their chats went with them)."""
    user = _users.get(owner) if owner is not None else None
    return user is not None and not user.is_admin


def own_things(space: str) -> list[Path]:
    """What of a user's `space` (as accounts/users.py keeps it) is theirs alone: the whole
    folder of usr/users/<name>/, the first admin's part of usr/ (`OWN_THINGS`); those that
    exist."""
    if space:
        folder = space_dir(space)
        return [folder] if folder.is_dir() else []
    return [path for name in OWN_THINGS if (path := usr_dir() / name).exists()]


def space_dir(space: str) -> Path:
    """The folder a user's `space` (as accounts/users.py keeps it) names."""
    return usr_path(*space.split("/")) if space else usr_dir()


def space_of(owner: str | None) -> Path:
    """The space of user `owner`: usr/ for None (the desktop mode) and for the first admin,
    usr/users/<name>/ for anyone else (a name no account has any more too: never usr/)."""
    if owner is None:
        return usr_dir()
    user = _users.get(owner)
    if user is not None:
        return space_dir(user.space)
    return usr_path(USERS_DIR, clean_name(owner))
