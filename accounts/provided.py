"""Users someone else vouches for: an OpenID Connect provider, or a reverse proxy that
logged them in and names them in a header (single sign-on).

Such a user has no password of Cadre's. The provider's word is who the person is and,
when the settings say which claim makes an admin, a role, applied again at every login.
The first time someone is seen they get an account, if the settings allow it. A disabled
account stays shut whoever vouches for it.

An OpenID Connect user is who the provider says: its issuer and the person's subject
(`sub`), which OpenID Connect makes the provider's unique key for them, never reassigned;
their name (a claim such as `preferred_username` or `email`, which on some providers a
person chooses, and which changes) is only what their account is called, chosen at the
first login (lower-case, a valid account name, accounts/users.py `clean_name`, made
unique when taken: `ann-2`). So a second provider, or another person calling themselves
the same, never gets into an account, the first admin's above all; and a changed name
keeps the account. An account made before subjects were kept is matched by its name
once (an OpenID Connect account with no subject on record), and keeps the subject from
then on.

A proxy's header is the word of the proxy that every request passes (the admin put it in
`trusted_proxies`): it names an account, any account, by its name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from accounts.users import Source, User, Users, clean_name
from helpers.errors import Forbidden, UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Vouched:
    """Who a provider says the person is."""

    #: The name as the provider gave it (a claim, a header): made an account name here.
    name: str
    source: Source
    #: True: an admin, False: a member; None: the provider says nothing of roles.
    admin: bool | None = None
    email: str = ""
    #: OpenID Connect: the provider (its issuer) and its subject for the person, who they
    #: are whatever their name; "" for a proxy's header.
    issuer: str = ""
    subject: str = ""


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
    if vouched.source == "oidc":
        user = _of_subject(users, vouched, name)
    else:  # a proxy's header: its name is all it says, and names any account
        user = users.get(name)
    if user is None:
        if not create:
            raise Forbidden(f"there is no account for you ({name!r}) here, and single sign-on "
                            "may not make one: ask an admin to add you")  # fmt: skip
        role = "admin" if vouched.admin else "member"
        user = users.add_provided(name, role, source=vouched.source, email=vouched.email[:200],
                                  issuer=vouched.issuer, subject=vouched.subject)  # fmt: skip
        log.info("accounts: %s made %s %r on first login", vouched.source, user.role, user.name)
        return user
    if user.disabled:
        raise Forbidden(f"the account {user.name!r} is disabled: ask an admin")
    return _with_role(users, user, vouched.admin)


def _of_subject(users: Users, vouched: Vouched, name: str) -> User | None:
    """The account of the provider's subject; one made before subjects were kept (an
    OpenID Connect account named `name`, no subject on record) once, which keeps it."""
    if not vouched.subject:
        raise UserError("the sign-in provider did not say who you are (no subject, `sub`): "
                        "ask an admin to check the single sign-on settings")  # fmt: skip
    found = users.by_subject(vouched.issuer, vouched.subject)
    if found is not None:
        return found
    older = users.get(name)
    if older is None or older.source != "oidc" or older.subject:
        return None
    log.info("accounts: %r is now known by their provider's subject, not their name",
             older.name)  # fmt: skip
    return users.update(older.name, issuer=vouched.issuer, subject=vouched.subject)


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
