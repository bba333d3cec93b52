"""The accounts: who may log in, with which role, and where their things live.

Kept in usr/users.json (owner-only, written whole and atomically, under a file lock so
two processes never interleave a change, and in a cluster under the cluster's lock
`users` too: accounts/stored_file.py); read again whenever the file changed, so a change
made by another process (the command line, another node) counts at once.

A user is an **admin** (users, global settings, shared profiles, skills and MCP
servers, everyone's usage) or a **member** (their own chats and things). Names are
lower-case, so that two accounts never differ only by case (a case-blind disk would
give them one folder). The first admin keeps the folders of the one-person install
(`space` ""), so an upgrade moves nothing; every other user's things live in
usr/users/<name>/.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from accounts.passwords import hash_password, is_hashed, verify_password
from accounts.stored_file import NEVER, Stamp, locked, stamp_of
from helpers.errors import UserError
from helpers.files import usr_path, write_text_atomic
from helpers.shared_files import SharedLocks

log = logging.getLogger(__name__)

Role = Literal["admin", "member"]
ROLES: tuple[Role, ...] = ("admin", "member")
#: How a user logs in: a password of Cadre's, or a provider that vouches for them.
Source = Literal["password", "oidc", "header"]
NAME = re.compile(r"[a-z0-9][a-z0-9._@-]{0,63}")
FILE = "users.json"
VERSION = 1
#: The limits an admin may set on an account (accounts/limits.py says what each means).
LIMIT_FIELDS = ("max_runs", "tokens_per_day", "cost_per_day", "upload_mb")


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    #: The scrypt hash (accounts/passwords.py); "" for one who logs in only through a provider.
    password: str = ""
    disabled: bool = False
    created: float = 0.0
    email: str = ""
    source: Source = "password"
    #: Their folder under usr/: "" for the first admin (the one-person install's
    #: folders), else users/<name>.
    space: str = ""
    #: Limits set on this account (accounts/limits.py): None for the server's default for
    #: members (none for an admin), 0 for no limit.
    max_runs: int | None = None
    tokens_per_day: int | None = None
    cost_per_day: float | None = None
    upload_mb: int | None = None
    #: Who an OpenID Connect user is at their provider: its issuer and their subject (`sub`,
    #: the provider's key for the person, never reassigned); "" for everyone else, and for
    #: one made before they were kept (accounts/provided.py matches them by name once).
    issuer: str = ""
    subject: str = ""

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def public(self) -> dict[str, Any]:
        """What the users API shows of them: never the password's hash."""
        return {"name": self.name, "role": self.role, "disabled": self.disabled,
                "created": self.created, "email": self.email, "source": self.source,
                "limits": {name: getattr(self, name) for name in LIMIT_FIELDS}}  # fmt: skip

    def stamp(self) -> str:
        """Changes with the password, the role and being disabled: sessions opened before
        stop (server/security/sessions.py)."""
        text = f"{self.name}\0{self.role}\0{self.password}\0{self.disabled}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def clean_name(name: object) -> str:
    """The account name `name` stands for, or UserError saying what a name may be."""
    text = str(name).strip().lower() if isinstance(name, str) else ""
    if not NAME.fullmatch(text):
        raise UserError(
            "a user name is 1 to 64 characters: letters, digits and . _ @ -, "
            "starting with a letter or digit"
        )
    return text


def clean_role(role: object) -> Role:
    if role not in ROLES:
        raise UserError(f"a role is one of: {', '.join(ROLES)}")
    return role  # type: ignore[return-value]


def check_password(password: object) -> str:
    if not isinstance(password, str) or len(password) < 8:
        raise UserError("a password has at least 8 characters")
    if len(password) > 1024:
        raise UserError("a password has at most 1,024 characters")
    return password


@dataclass
class _Seen:
    """The file as last read: its path and change stamp, and what it held."""

    stamp: Stamp = NEVER
    users: dict[str, User] = field(default_factory=dict)


class Users:
    """Every account, read from and written to usr/users.json."""

    def __init__(self, path: Path | None = None, shared: SharedLocks | None = None) -> None:
        #: A fixed file (tests), else usr/users.json wherever usr/ is at the time of asking.
        self._fixed = path
        #: The other processes changing the file (a cluster's node); None: this machine's.
        self._shared = shared
        self._lock = threading.RLock()
        self._seen = _Seen()

    @property
    def _path(self) -> Path:
        return self._fixed or usr_path(FILE)

    # -- reading -----------------------------------------------------------------

    def _current(self) -> dict[str, User]:
        stamp = stamp_of(self._path)
        with self._lock:
            if stamp != self._seen.stamp:
                self._seen = _Seen(stamp, self._read())
            return self._seen.users

    def _read(self) -> dict[str, User]:
        if not self._path.exists():
            return {}
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
            rows = data["users"]
            return {row["name"]: User(**row) for row in rows}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Refusing every login is safe; guessing who is who is not.
            log.error("the accounts file %s is unreadable (%s): nobody can log in until it "
                      "is repaired or restored from a backup", self._path, exc)  # fmt: skip
            raise UserError(
                f"the accounts file {self._path} is damaged: restore it from a backup"
            ) from exc

    def all(self) -> list[User]:
        return sorted(self._current().values(), key=lambda u: u.created)

    def get(self, name: str) -> User | None:
        return self._current().get(name.strip().lower()) if isinstance(name, str) else None

    def any(self) -> bool:
        """Does any account exist? (None: the one-person desktop mode.)"""
        return bool(self._current())

    def admins(self) -> list[User]:
        return [u for u in self.all() if u.is_admin and not u.disabled]

    def by_subject(self, issuer: str, subject: str) -> User | None:
        """The user an OpenID Connect provider (`issuer`) knows as `subject`, if any."""
        return next((u for u in self.all() if subject and (u.issuer, u.subject) == (issuer,
                     subject)), None)  # fmt: skip

    def first_admin(self) -> User | None:
        """The one who holds the one-person install's folders (space "")."""
        return next((u for u in self.all() if u.space == ""), None)

    def check(self, name: str, password: str) -> User | None:
        """The enabled user `name` when `password` is theirs; the same work for every miss."""
        user = self.get(name)
        ok = verify_password(password, user.password if user else "")
        return user if ok and user is not None and not user.disabled else None

    # -- changing ----------------------------------------------------------------

    @contextlib.contextmanager
    def _changing(self) -> Iterator[dict[str, User]]:
        """The accounts to change, read fresh under the file lock; written whole after."""
        with self._lock, locked(self._path, self._shared):
            users = dict(self._read())
            yield users
            rows = [asdict(u) for u in sorted(users.values(), key=lambda u: u.created)]
            write_text_atomic(self._path, json.dumps({"version": VERSION, "users": rows},
                                                     indent=1), mode=0o600)  # fmt: skip
            self._seen = _Seen()

    def add(self, name: str, role: Role, password: str = "", *, email: str = "",
            source: Source = "password", space: str | None = None) -> User:  # fmt: skip
        """A new account; UserError when the name is taken or not a name. `password` is
        plain (hashed here) or already a scrypt hash; "" for a provider's user."""
        name, role = clean_name(name), clean_role(role)
        with self._changing() as users:
            if name in users:
                raise UserError(f"there is already a user named {name!r}")
            if space is None:  # the first admin keeps the one-person install's folders
                # Only the first admin ever: once one was deleted (another admin stays,
                # always), a new admin takes nobody's folders over (nor the settings'
                # work folder and key, which are the install's).
                first = not any(u.space == "" or u.is_admin for u in users.values())
                space = "" if first and role == "admin" else f"users/{name}"
            user = User(name, role, _hashed(password), created=time.time(), email=email,
                        source=source, space=space)  # fmt: skip
            users[name] = user
        log.info("accounts: added %s %r", role, name)
        return user

    def add_provided(self, name: str, role: Role, *, source: Source, email: str = "",
                     issuer: str = "", subject: str = "") -> User:  # fmt: skip
        """A new account for someone a provider vouches for, under `name` or, when that is
        taken, `name-2`, `name-3`...: a name is only what they are called here, never a
        way into another's account. For an OpenID Connect `subject` that has an account
        already (two first logins at once), that account."""
        name, role = clean_name(name), clean_role(role)
        with self._changing() as users:
            if subject:
                for user in users.values():
                    if (user.issuer, user.subject) == (issuer, subject):
                        return user
            chosen = _free_name(name, users)
            user = User(chosen, role, created=time.time(), email=email, source=source,
                        space=f"users/{chosen}", issuer=issuer, subject=subject)  # fmt: skip
            users[chosen] = user
        if chosen != name:
            log.warning("accounts: the name %r is another's: the new %s account is %r (made "
                        "unique)", name, source, chosen)  # fmt: skip
        log.info("accounts: added %s %r", role, chosen)
        return user

    def update(self, name: str, **changes: Any) -> User:
        """Change `role`, `disabled`, `password` (plain or hashed), `email` or the limits
        (LIMIT_FIELDS) of a user;
        UserError when they do not exist, or the change would leave no enabled admin."""
        with self._changing() as users:
            user = users.get(clean_name(name))
            if user is None:
                raise UserError(f"there is no user named {name!r}")
            if "password" in changes:
                changes["password"] = _hashed(changes["password"])
            if "role" in changes:
                changes["role"] = clean_role(changes["role"])
            changed = replace(user, **changes)
            users[user.name] = changed
            _keep_an_admin(users)
        return changed

    def rename(self, old: str, new: str) -> User:
        """The first admin's login renamed in Settings: the same account under a new name."""
        with self._changing() as users:
            user = users.pop(clean_name(old), None)
            new = clean_name(new)
            if user is None:
                raise UserError(f"there is no user named {old!r}")
            if new in users:
                raise UserError(f"there is already a user named {new!r}")
            users[new] = replace(user, name=new)
            return users[new]

    def remove(self, name: str) -> User:
        with self._changing() as users:
            user = users.pop(clean_name(name), None)
            if user is None:
                raise UserError(f"there is no user named {name!r}")
            _keep_an_admin(users)
        log.info("accounts: removed %r", user.name)
        return user


def _free_name(name: str, users: dict[str, User]) -> str:
    """`name`, or the first of `name-2`, `name-3`... (at most 64 characters) nobody has."""
    number = 1
    found = name
    while found in users:
        number += 1
        suffix = f"-{number}"
        found = name[: 64 - len(suffix)] + suffix
    return found


def _hashed(password: str) -> str:
    if not password or is_hashed(password):
        return password
    return hash_password(check_password(password))


def _keep_an_admin(users: dict[str, User]) -> None:
    if users and not any(u.is_admin and not u.disabled for u in users.values()):
        raise UserError("Cadre needs at least one enabled admin: make another admin first")
