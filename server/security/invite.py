"""An invite link's page and its answer: the invited person chooses their password.

`GET /invite` is the page (the token rides in the address's fragment, so it reaches no
log); `GET /api/invite?token=` names the account it is for; `POST /api/invite`
`{"token", "password"}` sets the password, uses the token up and logs the person in.
An unknown, used or expired token gets the same answer, in plain words. Each answer
to a token is counted in the login throttle under the client's address.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify, request, send_from_directory

from accounts.users import check_password
from helpers.files import base_path
from helpers.settings import load_settings
from server.routes.routing import error
from server.security import audit, identity
from server.security.forwarded import client_address
from server.security.guard import throttle
from server.security.login import start_session

log = logging.getLogger(__name__)

invite_pages = Blueprint("invite", __name__)

GONE = (
    "this invite link is not valid any more (used, expired or replaced): ask your admin "
    "for a new one"
)


def _address() -> str:
    forwarded = request.headers.get("X-Forwarded-For")
    return client_address(request.remote_addr or "?", forwarded, load_settings().trusted_proxies)


@invite_pages.get("/invite")
def invite_page() -> Response:
    return send_from_directory(base_path("webui"), "invite.html")


@invite_pages.get("/api/invite")
def invite_for() -> Response | tuple[Response, int]:
    keys = [f"invite {_address()}"]
    wait = throttle().admit(keys)
    if wait > 0:
        return error(f"too many tries: try again in {wait:.0f} s", 429)
    name = identity.accounts().invites.peek(str(request.args.get("token", "")))
    if name is None:
        return error(GONE, 404)
    throttle().succeeded(keys)
    return jsonify({"name": name})


@invite_pages.post("/api/invite")
def accept() -> Response | tuple[Response, int]:
    data = request.get_json(silent=True)
    data = data if isinstance(data, dict) else {}
    address = _address()
    keys = [f"invite {address}"]
    wait = throttle().admit(keys)
    if wait > 0:
        return error(f"too many tries: try again in {wait:.0f} s", 429)
    password = check_password(data.get("password"))
    accounts = identity.accounts()
    name = accounts.invites.take(str(data.get("token", "")))
    user = accounts.users.get(name) if name else None
    if user is None or user.disabled:
        log.warning("invite: an unknown, used or expired token from %s", address)
        return error(GONE, 404)
    throttle().succeeded(keys)
    user = accounts.users.update(user.name, password=password)
    audit.record("invite_accepted", user.name, address)
    log.info("invite: %r chose a password from %s", user.name, address)
    start_session(user)
    return jsonify({"ok": True, "name": user.name})
