"""Who is asking: the user behind this request or Socket.IO event.

A page's request is its session's user (server/security/login.py puts the name in the
session); an API call is its key's owner (server/apis/key.py). Routes ask `viewer()` for
the name whose things they may show, `user()` for the whole account, and
`is_admin()` before what only an admin may do. In the desktop mode (no account
exists) nobody logs in, the viewer is None and sees everything, as before accounts.
"""

from __future__ import annotations

from pathlib import Path

from flask import current_app, g, has_request_context, session

from accounts.service import Accounts
from accounts.spaces import space_of
from accounts.users import User
from helpers.settings import load_settings


def accounts(fresh: bool = False) -> Accounts:
    """The app's accounts, put in step with the settings' login (the first admin) once a
    request (the guard and the route both ask; reading the settings costs a file read and
    a validation); `fresh`: again, after this request changed the settings."""
    found: Accounts = current_app.extensions["cadre.accounts"]
    if fresh or not has_request_context() or not g.get("cadre_synced"):
        settings = load_settings()
        found.sync(settings.auth_login, settings.auth_password)
        # The chats from before accounts are the first admin's (store/chats.py).
        current_app.extensions["cadre.chats"].legacy_owner = found.legacy_owner()
        if has_request_context():
            g.cadre_synced = True
    return found


def set_user(user: User | None) -> None:
    """This request acts as `user` (an API key's owner)."""
    g.cadre_user = user


def user() -> User | None:
    """The account this request acts as; None in the desktop mode (or before a login)."""
    if not has_request_context():
        return None
    if "cadre_user" in g:
        found: User | None = g.cadre_user
        return found
    name = session.get("user")
    found = accounts().users.get(name) if isinstance(name, str) and name else None
    g.cadre_user = found
    return found


def viewer() -> str | None:
    """The name whose things this request may see and change: every request acts as one
    user once accounts exist; None only in the desktop mode."""
    found = user()
    return found.name if found else None


def is_admin() -> bool:
    """May this request do what only an admin does? In the desktop mode, the one person may."""
    found = user()
    return found.is_admin if found else not accounts().required()


def space() -> Path:
    """The folder of the user asking (accounts/spaces.py): usr/ in the desktop mode."""
    return space_of(viewer())
