"""Request guards: login, CSRF, the Origin of changes, security headers.

The `Host` check runs before all of this, around the whole WSGI app
(server/security/hosts.py). Here every page route needs a live session when a login
is set (except the open paths), and every change needs the session's CSRF
token in a header; a change sent by a page of a foreign origin is refused
even before that. A trusted reverse proxy that logged the person in and names them in a
header (server/security/trusted_header.py) starts their session here, a real one, so the
page and its CSRF token work as after a password login.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time

from flask import Flask, Response, current_app, g, redirect, request, session
from flask.sessions import SecureCookieSessionInterface

from accounts.users import User
from cluster import relay_auth
from helpers.errors import UserError
from helpers.outbound import serves_loopback_only
from helpers.settings import load_settings
from server.cluster import relay
from server.routes.routing import error
from server.security import audit, auth, identity
from server.security.hosts import HostPolicy
from server.security.sessions import SessionStore, credentials_stamp
from server.security.throttle import Throttle
from server.security.trusted_header import ProxyLogins

log = logging.getLogger(__name__)

WEBUI_FILES = ("css", "img", "vendor")
#: Paths anyone may reach: the login page, what it needs, the CSRF token and the health check,
#: and an invite's page (its one-time token is its key).
OPEN_PATHS = frozenset(
    {"/health", "/login", "/api/csrf", "/js/login.js", "/js/http.js", "/js/theme-boot.js",
     "/invite", "/api/invite", "/js/invite.js",
     "/api/login/methods", "/login/oidc", "/login/oidc/callback"}
)  # fmt: skip
#: The first visit's page, and what it needs (server/security/welcome.py).
WELCOME_PATHS = frozenset({"/welcome", "/api/welcome", "/js/welcome.js"})
#: What only an admin may reach once accounts exist (path prefix, methods; None: every
#: method): the server's settings and its first-run setup, the shared MCP servers,
#: backups of the whole server, the audit log, and the cluster's nodes. Users' own routes
#: check themselves (server/routes/users.py: a member manages their own keys and password;
#: server/routes/skills.py: a member imports and deletes their own skills, an admin the
#: shared ones).
ADMIN_PATHS: tuple[tuple[str, frozenset[str] | None], ...] = (
    ("/api/settings", None),
    ("/api/audit", None),
    ("/api/backup", None),
    ("/api/mcp/", None),
    ("/api/setup/", None),
    ("/api/cluster", None),
    ("/api/evals", None),  # evaluations: the server's suites, models and results
    ("/api/plugins", None),  # plugins: their code runs on the host
)
#: What a session keeps of when its person last proved who they are (a Unix time).
SIGNED_IN = "signed_in"
#: How long a browser that reached Cadre over HTTPS keeps to HTTPS for it.
HSTS_SECONDS = 365 * 24 * 3600
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: No inline scripts or styles, nothing from elsewhere, not framed. Audio from the page's own
#: blobs: an answer read aloud is fetched with the CSRF token, then played (voice-output.js).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


class _TlsAwareSessions(SecureCookieSessionInterface):
    """The session cookie is marked Secure whenever the page came over TLS."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure or super().get_cookie_secure(app)


def sessions() -> SessionStore:
    store: SessionStore = current_app.extensions["cadre.sessions"]
    return store


def throttle() -> Throttle:
    found: Throttle = current_app.extensions["cadre.throttle"]
    return found


def proxy_logins() -> ProxyLogins:
    found: ProxyLogins = current_app.extensions["cadre.proxy_logins"]
    return found


def host_policy() -> HostPolicy:
    policy: HostPolicy = current_app.extensions["cadre.hosts"]
    return policy


def signing_key() -> bytes:
    key = current_app.secret_key
    return key if isinstance(key, bytes) else str(key).encode()


def credentials(user: User | None) -> str:
    """The stamp of `user`'s credentials in force (see server/security/sessions.py); "" for
    nobody."""
    return credentials_stamp(user, signing_key()) if user is not None else ""


def is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.split("/")[1:2] in ([f] for f in WEBUI_FILES)


def first_visit() -> bool:
    """Must the admin be made before anything else? Served beyond this machine's loopback
    with no account yet (server/security/welcome.py)."""
    return not serves_loopback_only(host_policy().serve_host) and not identity.accounts().required()


def admin_only(path: str, method: str) -> bool:
    """Is `path` (asked with `method`) an admin's alone? (ADMIN_PATHS)"""
    return any(path.startswith(prefix) and (methods is None or method in methods)
               for prefix, methods in ADMIN_PATHS)  # fmt: skip


def logged_in() -> bool:
    """Does this request (or Socket.IO event) belong to a live session of an enabled user,
    if one is needed?"""
    if not identity.accounts().required():
        return True
    if not _proxy_login():
        return False
    user = identity.user()
    if user is None or user.disabled:
        return False
    return sessions().alive(session.get("sid"), credentials(user))


def _proxy_login() -> bool:
    """The person a trusted proxy names is this browser's user: their session starts
    unless it is already theirs. False when the proxy names someone who may not log in."""
    settings = load_settings()
    try:
        user = proxy_logins().user(settings, identity.accounts().users)
    except UserError as exc:
        g.cadre_refused = str(exc)  # the guard's answer says why
        return False
    live = user is not None and sessions().alive(session.get("sid"), credentials(user))
    if user is not None and not (live and session.get("user") == user.name):
        start_session(user)
        audit.record_request("login", settings, user.name, method="header")
    return True


def start_session(user: User, signed_in: float | None = None) -> None:
    """This browser is `user`'s from now: a new session (its previous one ends). `signed_in`:
    when they last proved who they are (a provider's word; None: now), which confirms a
    risky change for someone without a password of Cadre's (server/security/reauth.py)."""
    sessions().end(session.get("sid"))
    session.clear()
    session["sid"] = sessions().start(credentials(user), user.name)
    session["user"] = user.name
    session["csrf"] = secrets.token_urlsafe(32)
    session[SIGNED_IN] = min(signed_in, time.time()) if signed_in is not None else time.time()
    identity.set_user(user)


def signed_in_again(user: User, signed_in: float | None) -> None:
    """`user` signed in through their provider: a live session of theirs in this browser
    goes on, knowing when they proved who they are (`signed_in`; None: now); any other
    starts anew. Ending theirs would close the socket of the page that sent them to sign
    in again, which reloads itself over the sign-in coming back (server/security/reauth.py)."""
    if session.get("user") == user.name and sessions().alive(session.get("sid"), credentials(user)):
        session[SIGNED_IN] = min(signed_in, time.time()) if signed_in is not None else time.time()
        identity.set_user(user)
        return
    start_session(user, signed_in)


def renew_session(before: str | None) -> None:
    """The first admin's credentials were changed by this request (Settings' login and
    password; `before` their name then): their other sessions end, this one goes on (or
    starts, when there was no login before)."""
    user = identity.accounts().users.first_admin()
    if user is None or session.get("user") not in (before, user.name, None):
        return  # another admin changed them: their own session is not the first admin's
    stamp = credentials(user)
    if not sessions().keep_only(session.get("sid"), stamp, user.name):
        session["sid"] = sessions().start(stamp, user.name)
    session["user"] = user.name
    identity.set_user(user)


def _csrf_ok() -> bool:
    expected = session.get("csrf", "")
    given = request.headers.get(auth.CSRF_HEADER, "")
    return bool(expected) and hmac.compare_digest(given.encode(), str(expected).encode())


def install(app: Flask) -> None:
    """Guard every request of `app` (the external API checks its own key)."""

    @app.before_request
    def guard() -> Response | tuple[Response, int] | None:
        path = request.path
        if request.headers.get(relay_auth.HEADER) is not None:
            # A peer node's, for the person it names (cluster mode), or refused.
            return relay.admit()
        if first_visit() and path not in WELCOME_PATHS and (path == "/login" or not is_open(path)):
            if path in ("/", "/login"):
                return redirect("/welcome")
            return error("nobody has an account yet: make the admin at /welcome first", 401)
        if path.startswith(("/api/v1/", "/v1/")) or path == "/api_message":
            return None  # the APIs and the OpenAI-compatible endpoint have their key
        if not is_open(path) and path not in WELCOME_PATHS and not logged_in():
            if path == "/":
                return redirect("/login")
            return error(g.get("cadre_refused", "log in first"), 401)
        if admin_only(path, request.method) and not identity.is_admin():
            log.warning("refused %s %s to %s: only an admin may", request.method, path,
                        identity.viewer())  # fmt: skip
            return error("only an admin may do this: ask one of your server's admins", 403)
        if request.method not in SAFE_METHODS:
            origin = request.headers.get("Origin")
            if origin is not None and not host_policy().allows_origin(origin):
                log.warning("refused a %s %s from origin %r", request.method, path, origin[:100])
                return error(f"requests from origin {origin[:100]!r} are refused", 403)
            if not _csrf_ok():
                return error("missing or wrong CSRF token", 403)
        return None

    @app.after_request
    def headers(response: Response) -> Response:
        # A route may set a stricter policy of its own (the MCP files: a sandbox).
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        if request.is_secure:  # over HTTPS (through a trusted proxy): keep to it for a year
            response.headers["Strict-Transport-Security"] = f"max-age={HSTS_SECONDS}"
        return response

    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Strict")
    app.session_interface = _TlsAwareSessions()
    app.secret_key = auth.secret_key()
