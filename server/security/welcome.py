"""The first visit of a server nobody has an account on yet: make the admin.

Served on another address than this machine's loopback with no account, Cadre would run
commands for whoever reaches it; so until an admin exists, every page leads to
`/welcome`, and every other request is refused. The page asks for the admin's login and
password and for the one-time **setup code** Cadre wrote to its log (and to
usr/welcome_code, owner-only) at start: only the person who started Cadre can read it, so
a stranger who finds the address first cannot take the server. The admin made is the
settings' login (`auth_login`, `auth_password`), the first admin of accounts/first_admin.py.
On 127.0.0.1 with no account, the one-person desktop mode stays as it always was.
"""

from __future__ import annotations

import hmac
import logging
import secrets

from flask import Blueprint, Response, jsonify, request, send_from_directory

from accounts.passwords import hash_password
from accounts.users import check_password, clean_name
from helpers.files import base_path, usr_path
from helpers.settings import Settings, load_settings, save_settings
from server.routes.routing import error
from server.routes.settings import stored_settings
from server.security import audit, identity
from server.security.forwarded import client_address
from server.security.guard import first_visit, throttle
from server.security.login import start_session

log = logging.getLogger(__name__)

welcome_pages = Blueprint("welcome", __name__)

FILE = "welcome_code"


def setup_code() -> str:
    """The one-time code, made once (kept in usr/welcome_code, owner-only) and logged."""
    path = usr_path(FILE)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        code = "-".join(secrets.token_hex(3) for _ in range(3))
        try:
            with open(path, "x", encoding="utf-8") as handle:
                path.chmod(0o600)
                handle.write(code)
        except FileExistsError:
            pass  # another thread made it first
    return path.read_text(encoding="utf-8").strip()


def announce(url: str) -> None:
    """Tell the person starting Cadre how to make the admin (the server log: their console)."""
    log.warning("nobody has an account yet: open %s/welcome and enter the setup code %s "
                "to make the admin account", url.rstrip("/"), setup_code())  # fmt: skip


@welcome_pages.get("/welcome")
def welcome_page() -> Response:
    return send_from_directory(base_path("webui"), "welcome.html")


@welcome_pages.post("/api/welcome")
def make_admin() -> Response | tuple[Response, int]:
    if not first_visit():
        return error("this server has its admin already: log in", 409)
    data = request.get_json(silent=True)
    data = data if isinstance(data, dict) else {}
    address = client_address(request.remote_addr or "?", request.headers.get("X-Forwarded-For"),
                             load_settings().trusted_proxies)  # fmt: skip
    keys = [f"welcome {address}"]
    wait = throttle().admit(keys)
    if wait > 0:
        return error(f"too many wrong codes: try again in {wait:.0f} s", 429)
    given = str(data.get("code", "")).strip().lower()
    if not hmac.compare_digest(given.encode(), setup_code().encode()):
        log.warning("welcome: a wrong setup code from %s", address)
        return error("wrong setup code: it is in the server's log (and in usr/welcome_code)", 403)
    name = clean_name(data.get("name"))
    password = check_password(data.get("password"))
    throttle().succeeded(keys)
    chosen = {"auth_login": name, "auth_password": hash_password(password)}
    save_settings(Settings.model_validate({**stored_settings(), **chosen}))
    user = identity.accounts(fresh=True).users.get(name)  # made by the sync it runs
    if user is None:
        return error("the admin could not be made: see the server's log", 500)
    usr_path(FILE).unlink(missing_ok=True)
    log.info("welcome: %r is the admin, from %s", name, address)
    audit.record("user_added", name, address, name=name, role="admin", first=True)
    start_session(user)
    return jsonify({"ok": True, "name": name})
