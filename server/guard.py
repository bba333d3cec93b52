"""Request guards: login, CSRF, security headers; and the login routes themselves."""

from __future__ import annotations

import hmac
import secrets

from flask import (
    Blueprint,
    Flask,
    Response,
    jsonify,
    redirect,
    request,
    send_from_directory,
    session,
)
from flask.sessions import SecureCookieSessionInterface

from helpers.settings import load_settings
from server import auth

WEBUI_FILES = ("css", "img", "vendor")
#: Paths anyone may reach: the login page, what it needs, and the health check.
OPEN_PATHS = frozenset({"/health", "/login", "/js/login.js", "/js/http.js"})
#: No inline scripts or styles, nothing from elsewhere, not framed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)

login_pages = Blueprint("login", __name__)


class _TlsAwareSessions(SecureCookieSessionInterface):
    """The session cookie is marked Secure whenever the page came over TLS."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure or super().get_cookie_secure(app)


throttle = auth.Throttle()


def is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.split("/")[1:2] in ([f] for f in WEBUI_FILES)


def logged_in() -> bool:
    return bool(session.get("user")) or not auth.login_required(load_settings())


def install(app: Flask) -> None:
    """Guard every request of `app` (the external API checks its own key)."""

    @app.before_request
    def guard() -> Response | tuple[Response, int] | None:
        path = request.path
        if path.startswith("/api/v1/") or path.startswith("/socket.io"):
            return None  # the API has its key; Socket.IO checks on connect
        if not is_open(path) and not logged_in():
            if path == "/":
                return redirect("/login")
            return jsonify({"error": "log in first"}), 401
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            expected = session.get("csrf", "")
            given = request.headers.get(auth.CSRF_HEADER, "")
            if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
                return jsonify({"error": "missing or wrong CSRF token"}), 403
        return None

    @app.after_request
    def headers(response: Response) -> Response:
        if not request.path.startswith("/api/v1/"):
            if "csrf" not in session:
                session["csrf"] = secrets.token_urlsafe(32)
            response.set_cookie(auth.CSRF_COOKIE, session["csrf"], samesite="Strict",
                                secure=request.is_secure)  # fmt: skip
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Strict")
    app.session_interface = _TlsAwareSessions()
    app.secret_key = auth.secret_key()
    app.register_blueprint(login_pages)


@login_pages.get("/login")
def login_page() -> Response:
    from server.routes import WEBUI

    return send_from_directory(WEBUI, "login.html")


@login_pages.post("/login")
def login() -> Response | tuple[Response, int]:
    address = request.remote_addr or "?"
    wait = throttle.wait_for(address)
    if wait > 0:
        return jsonify({"error": f"too many failed logins: try again in {wait:.0f} s"}), 429
    data = request.get_json(silent=True) or {}
    settings = load_settings()
    name, password = str(data.get("login", "")), str(data.get("password", ""))
    name_ok = hmac.compare_digest(name.encode(), settings.auth_login.encode())
    # The password is checked even for a wrong name: no timing tells names apart.
    password_ok = auth.verify_password(password, settings.auth_password)
    if not (settings.auth_login and name_ok and password_ok):
        throttle.failed(address)
        return jsonify({"error": "wrong login or password"}), 401
    throttle.succeeded(address)
    session.clear()
    session["user"] = name
    session["csrf"] = secrets.token_urlsafe(32)
    return jsonify({"ok": True})


@login_pages.post("/logout")
def logout() -> Response:
    session.clear()
    return jsonify({"ok": True})
