"""Proof it is the account's person again, for a change that lets the host run another program.

Once accounts exist, a page's session alone does not change a guarded setting
(helpers/programs.py `GUARDED_SETTINGS`: the programs the host runs, the
sandbox): the same request carries the account's password in the
`X-Cadre-Password` header, percent-encoded (a header holds only ASCII): the password of
the account the request acts as. A
session taken over (a page left open, a stolen cookie) then cannot make the
host run a program. Without a login nothing is asked: the setting is still
refused where an agent could have written the program.

Each check is counted in the login throttle (server/security/throttle.py) under the
client's address and the account, before the password is checked, so guesses
here and at /login share one budget; a wrong one is logged with the address.
The answer asking for it is a 403 with `password_required` (the settings it is
for), which the page's http.js turns into its password dialog.

Someone who signs in only through an OpenID Connect provider has no password to give.
For them the proof is the provider's: a sign-in there within the last `RECENT_SECONDS`
(its ID token's `auth_time`, kept with the session: an hour-old session at the provider
that let them in without asking is no proof). Without one, the 403 has
`sign_in_required` and `sign_in_url`, which sends them through the provider again with
`prompt=login` and `max_age` (server/security/oidc.py), so the provider asks them
again, whatever session they have there; the page shows a "Sign in again" link. Someone a
trusted proxy names has no password either, and Cadre cannot make a proxy ask them again:
the answer says to have an admin set a password on their account (or make the change).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from urllib.parse import unquote

from flask import Response, jsonify, request, session

from accounts.passwords import verify_password
from accounts.users import User
from helpers.settings import Settings, load_settings
from server.routes.routing import error
from server.security import audit, identity
from server.security.forwarded import client_address
from server.security.guard import SIGNED_IN, throttle
from server.security.oidc import AGAIN_URL, DEFAULT_NAME, RECENT_SECONDS
from server.security.oidc_client import OidcConfig
from server.security.throttle import login_keys

log = logging.getLogger(__name__)

PASSWORD_HEADER = "X-Cadre-Password"


def _asked(changed: Sequence[str], problem: str = "") -> tuple[Response, int]:
    """The 403 asking for the password: the settings by name, and as the form titles them."""
    text = f"enter your password to change {', '.join(changed)}"
    fields = Settings.model_fields
    titles = [fields[name].title or name if name in fields else name for name in changed]
    answer = jsonify({"error": f"{problem}: {text}" if problem else text,
                      "password_required": list(changed), "titles": titles})  # fmt: skip
    return answer, 403


def password_refusal(changed: Sequence[str]) -> tuple[Response, int] | None:
    """None when this request may change the guarded settings `changed` (none changed, no
    login set, or the right password given); else the answer to send instead."""
    settings = load_settings()
    user = identity.user()
    if not changed or user is None:
        return None
    if not user.password:  # single sign-on alone: the provider's proof, or words
        return _provider_refusal(changed, user, settings)
    given = request.headers.get(PASSWORD_HEADER)
    if given is None:
        return _asked(changed)
    address = client_address(request.remote_addr or "?", request.headers.get("X-Forwarded-For"),
                             settings.trusted_proxies)  # fmt: skip
    keys = login_keys(address, user.name)
    wait = throttle().admit(keys)
    if wait > 0:
        log.warning("password for %s: throttled an attempt from %s", ", ".join(changed), address)
        return error(f"too many wrong passwords: try again in {wait:.0f} s", 429)
    if not verify_password(unquote(given), user.password):
        log.warning("password for %s: wrong password from %s", ", ".join(changed), address)
        audit.record("password_failed", user.name, address, fields=sorted(changed))
        return _asked(changed, "wrong password")
    throttle().succeeded(keys)
    log.info("password for %s: confirmed from %s", ", ".join(changed), address)
    return None


def _provider_refusal(changed: Sequence[str], user: User,
                      settings: Settings) -> tuple[Response, int] | None:  # fmt: skip
    """For `user`, who has no password of Cadre's: None when their provider made them
    prove who they are within the last `RECENT_SECONDS`; else the answer saying how."""
    what = ", ".join(changed)
    if user.source == "oidc" and OidcConfig.of(settings) is not None:
        signed_in = session.get(SIGNED_IN)
        age = time.time() - signed_in if isinstance(signed_in, int | float) else None
        if age is not None and age <= RECENT_SECONDS:
            log.info("%s confirmed by %s's sign-in %.0f s ago", what, user.name, age)
            return None
        provider = settings.oidc_provider_name.strip() or DEFAULT_NAME
        text = (f"sign in again through {provider} to change {what}: only a sign-in within "
                f"the last {RECENT_SECONDS // 60} minutes confirms it is you")  # fmt: skip
        fields = Settings.model_fields
        titles = [fields[name].title or name if name in fields else name for name in changed]
        return jsonify({"error": text, "sign_in_required": list(changed), "titles": titles,
                        "sign_in_url": AGAIN_URL, "provider": provider}), 403  # fmt: skip
    how = "through the proxy in front of Cadre" if user.source == "header" else "without one"
    log.warning("%s refused to %s: no password, and signs in %s", what, user.name, how)
    return error(f"changing {what} needs your password, and your account has none: it signs "
                 f"in {how}, which cannot be asked to check it is you again. Ask an admin to "
                 "set a password for your account (then confirm with it here), or to make "
                 "this change", 403)  # fmt: skip
