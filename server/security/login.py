"""The login routes: the page, logging in and out, and the CSRF token.

A login is throttled before its password is checked (server/security/throttle.py); a
browser that logged in before is counted apart (server/security/devices.py). Every
check is logged with the client's address, so failed guesses show in the
server log. Logout ends the session on the server (server/security/sessions.py).
Every login starts its session with `start_session` (kept in server/security/guard.py,
which starts the sessions of a trusted proxy's logins too).
"""

from __future__ import annotations

import logging
import secrets

from flask import Blueprint, Response, jsonify, request, send_from_directory, session

from helpers.files import base_path
from helpers.settings import load_settings
from server.routes.routing import error
from server.security import audit, auth, devices, identity
from server.security.forwarded import client_address
from server.security.guard import credentials, sessions, signing_key, start_session, throttle
from server.security.throttle import KEY_CHARS, login_keys

log = logging.getLogger(__name__)

login_pages = Blueprint("login", __name__)


@login_pages.get("/login")
def login_page() -> Response:
    return send_from_directory(base_path("webui"), "login.html")


@login_pages.get("/api/csrf")
def csrf() -> Response:
    """The session's CSRF token; a page of another origin cannot read this answer."""
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    response = jsonify({"token": session["csrf"]})
    response.headers["Cache-Control"] = "no-store"
    return response


def _admit(name: str, address: str, device: str | None) -> tuple[list[str], float]:
    """Count the attempt: the keys it was counted under, or the seconds it must wait.
    A known browser has its own key; once that is full it is counted like any other."""
    if device is not None:
        keys = [f"device {device}"]
        if throttle().admit(keys) == 0:
            return keys, 0.0
    keys = login_keys(address, name)
    return keys, throttle().admit(keys)


@login_pages.post("/login")
def login() -> Response | tuple[Response, int]:
    settings = load_settings()
    data = request.get_json(silent=True)
    data = data if isinstance(data, dict) else {}
    name, password = str(data.get("login", "")), str(data.get("password", ""))
    forwarded = request.headers.get("X-Forwarded-For")
    address = client_address(request.remote_addr or "?", forwarded, settings.trusted_proxies)
    key = signing_key()
    users = identity.accounts().users
    known = users.get(name)
    # The device cookie is bound to the account it logged in (its stamp: a password change
    # forgets the browser); an unknown name's is checked against nothing.
    device = devices.device_id(request.cookies.get(auth.DEVICE_COOKIE), key,
                               credentials(known) if known else "")  # fmt: skip
    shown = repr(name[:KEY_CHARS])
    keys, wait = _admit(name, address, device)
    if wait > 0:
        log.warning("login: throttled an attempt for %s from %s", shown, address)
        return error(f"too many failed logins: try again in {wait:.0f} s", 429)
    # The password is checked even for a wrong name: no timing tells names apart.
    user = users.check(name, password)
    if user is None:
        disabled = known is not None and known.disabled
        why = "a disabled account" if disabled else "wrong login or password"
        log.warning("login: %s for %s from %s", why, shown, address)
        audit.record("login_failed", name[:KEY_CHARS], address)
        return error("wrong login or password", 401)
    throttle().succeeded(keys)
    log.info("login: %s logged in from %s", shown, address)
    audit.record("login", user.name, address)
    start_session(user)
    response = jsonify({"ok": True})
    devices.remember(response, device, key, credentials(user), request.is_secure)
    return response


@login_pages.post("/logout")
def logout() -> Response:
    if session.get("sid"):
        audit.record_request("logout", load_settings())
    sessions().end(session.get("sid"))
    session.clear()
    return jsonify({"ok": True})
