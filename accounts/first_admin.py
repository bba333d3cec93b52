"""The login of the settings is the first admin.

Before accounts, Cadre had one login: `auth_login` and `auth_password` (Settings, or
`CADRE_AUTH_LOGIN` / `CADRE_AUTH_PASSWORD`). That login is the first admin: made the
first time it is seen, renamed when the setting is renamed, its password changed when
the setting's changes (the environment's, a plain text, is compared with the hash, not
stored again, so a restart ends no session). It keeps the one-person install's folders
(`space` ""): upgrading moves nothing, and every chat, memory and setting is theirs.
Clearing the login while the first admin is the only account goes back to the no-login
desktop mode, as before accounts.
"""

from __future__ import annotations

import logging
import threading

from accounts.passwords import hash_password, is_hashed, verify_password
from accounts.users import User, Users, clean_name
from helpers.errors import UserError

log = logging.getLogger(__name__)


class FirstAdmin:
    """Keeps the first admin in step with the settings' login (cheap when nothing changed)."""

    def __init__(self, users: Users) -> None:
        self._users = users
        self._lock = threading.Lock()
        #: The (login, password) last put in step, and the accounts file's state then.
        self._done: tuple[str, str, str] | None = None

    def sync(self, login: str, password: str) -> User | None:
        """Make the accounts agree with the settings' `login` and `password` (plain or a
        hash); the first admin afterwards (None: no login, no accounts)."""
        with self._lock:
            first = self._users.first_admin()
            seen = (login, password, first.stamp() if first else "")
            if self._done == seen:
                return first
            first = self._apply(login.strip(), password, first)
            self._done = (login, password, first.stamp() if first else "")
            return first

    def _apply(self, login: str, password: str, first: User | None) -> User | None:
        if not login:
            if first is not None and len(self._users.all()) == 1:
                self._users.remove(first.name)
                log.info("accounts: the login was cleared: back to the desktop mode")
                return None
            return first
        try:
            name = clean_name(login)
        except UserError as exc:
            log.error("the login %r cannot be an account's name (%s): change it in Settings "
                      "or CADRE_AUTH_LOGIN", login[:64], exc)  # fmt: skip
            return first
        if (first is None or first.name != name) and self._users.get(name) is not None:
            # Made again or renamed, the account would take another's name (or their
            # folders): refused, said in the log, and every login goes on as it was.
            log.error("the login %r in the settings is another account's, not the first "
                      "admin's: nothing changed; choose another login in Settings (or "
                      "CADRE_AUTH_LOGIN)", name)  # fmt: skip
            return first
        if first is None:
            made = self._users.add(name, "admin", _stored(password, ""), space="")
            log.info("accounts: the login %r is the first admin", name)
            return made
        if first.name != name:
            first = self._users.rename(first.name, name)
            log.info("accounts: the first admin is now named %r", name)
        if not _same(password, first.password):
            first = self._users.update(name, password=_stored(password, first.password))
        return first


def _same(given: str, stored: str) -> bool:
    if is_hashed(given):
        return given == stored
    return bool(given) and verify_password(given, stored)


def _stored(given: str, stored: str) -> str:
    """The hash to keep: the setting's hash as it is; a plain password hashed."""
    if not given or is_hashed(given):
        return given
    return stored if verify_password(given, stored) else hash_password(given)
