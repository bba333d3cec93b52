"""The account's password again, for a change that lets the host run another program.

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
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from urllib.parse import unquote

from flask import Response, jsonify, request

from accounts.passwords import verify_password
from helpers.settings import Settings, load_settings
from server.routes.routing import error
from server.security import audit, identity
from server.security.forwarded import client_address
from server.security.guard import throttle
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
