"""A reverse proxy that logs people in (oauth2-proxy, Authelia, Authentik's proxy) and names
them in a header: `Remote-User`, else `Remote-Email` (the settings name both).

Anyone can write such a header, so it is believed only when the setting
`sso_header_login` is on and the request comes straight from an address of
`trusted_proxies` (server/security/forwarded.py): the proxy then overwrites whatever
the browser sent. From any other address the header is ignored (and that is logged once
per address), so the request needs a session of its own as always.

Who the proxy names is an account (accounts/provided.py: made on first sight when the
settings allow it; refused when disabled). server/security/guard.py starts their
session, so the page works as after a password login, changes included (they still need
the session's CSRF token).
"""

from __future__ import annotations

import logging
import threading

from flask import request

from accounts.provided import Vouched, provided_user
from accounts.users import User, Users
from helpers.errors import UserError
from helpers.settings import Settings
from server.security.forwarded import networks, within

log = logging.getLogger(__name__)

#: Addresses (and refused names) told once each in the log, at most this many remembered.
TOLD_MAX = 1_000
#: The longest header value taken (a name is at most 64 characters; an email, 200).
VALUE_CHARS = 200


class ProxyLogins:
    """Who a trusted proxy's header says the person is; what was told to the log once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._told: set[str] = set()

    def user(self, settings: Settings, users: Users) -> User | None:
        """The account the proxy names; None when it names nobody (or may not: the header
        is off, or the request is not a trusted proxy's). UserError when it names someone
        who may not log in (disabled, or no account and none may be made)."""
        if not settings.sso_header_login:
            return None
        header = settings.sso_user_header
        named = request.headers.get(header, "").strip()
        email = request.headers.get(settings.sso_email_header, "").strip()
        if not named:
            header, named = settings.sso_email_header, email
        if not named:
            return None
        remote = request.remote_addr or "?"
        if not within(remote, networks(settings.trusted_proxies)):
            self._tell_once(
                f"address {remote}",
                "single sign-on: ignored the %s header from "
                "%s, which is not a trusted proxy (trusted_proxies)",
                header,
                remote,
            )
            return None
        vouched = Vouched(named[:VALUE_CHARS], "header", None, email[:VALUE_CHARS])
        try:
            return provided_user(users, vouched, settings.sso_create_users)
        except UserError as exc:
            self._tell_once(
                f"name {named[:VALUE_CHARS]}",
                "single sign-on: the proxy at %s names %r, who may not log in: %s",
                remote,
                named[:64],
                exc,
            )
            raise

    def _tell_once(self, key: str, message: str, *args: object) -> None:
        with self._lock:
            if key in self._told:
                return
            if len(self._told) >= TOLD_MAX:
                self._told.clear()  # a flood of addresses: tell them again rather than grow
            self._told.add(key)
        log.warning(message, *args)
