"""The accounts of one Cadre server, as the server asks for them: who a login, a session or
an API key is, kept in step with the settings' login (accounts/first_admin.py)."""

from __future__ import annotations

import hmac
import logging
import shutil
import time
from dataclasses import dataclass

from accounts.first_admin import FirstAdmin
from accounts.invites import Invites
from accounts.keys import Keys
from accounts.spaces import own_things, space_of
from accounts.users import User, Users
from helpers.files import usr_dir
from helpers.shared_files import SharedLocks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyHolder:
    """Who an API key acts as: `user` None only in the desktop mode (no accounts)."""

    user: User | None


class Accounts:
    """The users and their keys (files under usr/, read again when they change). `shared`:
    the other processes that change them (a cluster's node; None: this machine's alone)."""

    def __init__(self, users: Users | None = None, keys: Keys | None = None,
                 shared: SharedLocks | None = None) -> None:  # fmt: skip
        self.users = users or Users(shared=shared)
        self.keys = keys or Keys(shared=shared)
        self.invites = Invites(shared=shared)
        self._first = FirstAdmin(self.users)

    def sync(self, login: str, password: str) -> None:
        """The settings' login is the first admin (cheap when nothing changed)."""
        self._first.sync(login, password)

    def required(self) -> bool:
        """Must a person log in? Yes once any account exists; no in the desktop mode."""
        return self.users.any()

    def legacy_owner(self) -> str | None:
        """Whose the things from before accounts are: the first admin's (None: no accounts)."""
        first = self.users.first_admin()
        return first.name if first else None

    def any_key(self, setting: str) -> bool:
        """Is any API key set at all (else every API is off)?"""
        return bool(setting) or self.keys.any()

    def key_holder(self, key: str, setting: str) -> KeyHolder | None:
        """Who `key` acts as, or None for no key or a wrong one, or a disabled user's. The
        `api_key` setting is the first admin's key (everyone's, in the desktop mode)."""
        if not key:
            return None
        if setting and hmac.compare_digest(key.encode(), setting.encode()):
            first = self.users.first_admin()
            if first is None:
                return None if self.users.any() else KeyHolder(None)
            return KeyHolder(first) if not first.disabled else None
        owner = self.keys.owner_of(key)
        user = self.users.get(owner) if owner else None
        return KeyHolder(user) if user is not None and not user.disabled else None

    def retire_space(self, user: User, heir: User | None) -> str:
        """The things of a deleted `user`'s space (accounts/spaces.py `own_things`: their
        folder; the first admin's part of usr/): removed, or moved into `heir`'s space as
        handed-over/<name>/ (nothing lost: their work folder, memory and projects are
        there to read). What became of them, for the answer."""
        things = own_things(user.space)
        if not things:
            return "none"
        if heir is None:
            for path in things:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            log.info("accounts: removed %r's folders (%s)", user.name,
                     ", ".join(str(p) for p in things))  # fmt: skip
            return "deleted"
        target = space_of(heir.name) / "handed-over" / user.name
        if target.exists():
            target = target.with_name(f"{user.name}-{int(time.time())}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if user.space:
            things[0].rename(target)
        else:  # the first admin's: their part of usr/, into a folder of its own
            target.mkdir()
            for path in things:
                path.rename(target / path.name)
        log.info("accounts: moved %r's folders to %s", user.name, target)
        return str(target.relative_to(usr_dir()))
