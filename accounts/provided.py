"""Users someone else vouches for: an OpenID Connect provider, or a reverse proxy that
logged them in and names them in a header (single sign-on).

Such a user has no password of Cadre's. The provider's word is a name (made a valid,
lower-case account name, accounts/users.py `clean_name`, or refused) and, when the
settings say which claim makes an admin, a role, applied again at every login. The first
time a name is seen it becomes an account, if the settings allow it. A disabled account
stays shut whoever vouches for it.

An OpenID Connect login may only be an account that such logins made: OpenID Connect
says a `preferred_username` is no unique key (on some providers a person chooses their
own), so a provider's word never opens an account made with a password, the first
admin's above all. A proxy's header is the word of the proxy that every request passes
(the admin put it in `trusted_proxies`), and may name any account.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from accounts.users import Source, User, Users, clean_name
from helpers.errors import Forbidden, UserError

log = logging.getLogger(__name__)

#: Which accounts each kind of voucher may log in, by how the account logs in.
MAY_BE: dict[Source, frozenset[Source]] = {
    "oidc": frozenset({"oidc"}),
    "header": frozenset({"header", "oidc", "password"}),
}


@dataclass(frozen=True)
class Vouched:
    """Who a provider says the person is."""

    #: The name as the provider gave it (a claim, a header): made an account name here.
    name: str
    source: Source
    #: True: an admin, False: a member; None: the provider says nothing of roles.
    admin: bool | None = None
    email: str = ""


def provided_user(users: Users, vouched: Vouched, create: bool) -> User:
    """The enabled account `vouched` stands for, made first when `create` allows, with the
    role the provider gave; UserError (Forbidden when the account may not log in) saying
    why in words a person can act on."""
    try:
        name = clean_name(vouched.name)
    except UserError as exc:
        raise UserError(
            f"your sign-in gave the name {vouched.name[:64]!r}, which Cadre cannot "
            f"use ({exc}): ask an admin to check the single sign-on settings"
        ) from None
    user = users.get(name)
    if user is None:
        if not create:
            raise Forbidden(f"there is no account named {name!r} here, and single sign-on may "
                            "not make one: ask an admin to add you")  # fmt: skip
        role = "admin" if vouched.admin else "member"
        user = users.add(name, role, email=vouched.email[:200], source=vouched.source)
        log.info("accounts: %s made %s %r on first login", vouched.source, role, name)
        return user
    if user.source not in MAY_BE[vouched.source]:
        raise Forbidden(f"the account {name!r} logs in with a password, not through single "
                        "sign-on: log in with your password, or ask an admin")  # fmt: skip
    if user.disabled:
        raise Forbidden(f"the account {name!r} is disabled: ask an admin")
    return _with_role(users, user, vouched.admin)


def _with_role(users: Users, user: User, admin: bool | None) -> User:
    """`user` with the role the provider says now (None: unchanged)."""
    role = user.role if admin is None else ("admin" if admin else "member")
    if role == user.role:
        return user
    try:
        changed = users.update(user.name, role=role)
    except UserError as exc:  # the last enabled admin: Cadre keeps one
        log.warning("accounts: %r keeps the role %s the provider took away: %s", user.name,
                    user.role, exc)  # fmt: skip
        return user
    log.info("accounts: %r is now %s, as the provider says", user.name, role)
    return changed
