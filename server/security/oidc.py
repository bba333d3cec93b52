"""Logging in through an OpenID Connect provider (Keycloak, Authentik, Authelia, Google...).

    GET /api/login/methods      what the login page offers besides the password (open)
    GET /login/oidc             sends the browser to the provider (state, nonce, PKCE);
                                `?again=1`: the provider asks the person again (a risky
                                change wants a recent sign-in, server/security/reauth.py)
    GET /login/oidc/callback    the provider's answer: the code exchanged, the ID token
                                checked, the account found or made, the session started,
                                and a page that moves on to the app (`/`)

What the answer must match (state, nonce, PKCE verifier) waits in a cookie of its own,
signed with the server's key, for ten minutes, SameSite=Lax: the provider's redirect
back is a navigation from another site, which the session cookie (SameSite=Strict)
does not come along with. The state that comes back must be the cookie's, so nobody can
slip their own sign-in into another's browser. The provider's talk (discovery, keys,
the token) is server/security/oidc_client.py's; who the claims make an account is
accounts/provided.py's.

Whatever fails (the provider down, a state that does not match, a token that does not
pass) is a page (or JSON) in plain words with the next step, and a line in the log.
"""

from __future__ import annotations

import hmac
import html
import logging
from dataclasses import asdict

from flask import Blueprint, Response, current_app, jsonify, redirect, request, url_for
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from accounts.provided import Vouched, provided_user
from accounts.users import User
from helpers.errors import Forbidden, UserError
from helpers.settings import Settings, load_settings
from server.security import audit, identity
from server.security.forwarded import client_address
from server.security.guard import signed_in_again, signing_key
from server.security.oidc_client import (
    OidcClients,
    OidcConfig,
    Pending,
    SignInFailed,
    authenticated_at,
    begin,
    finish,
    is_admin,
    user_name,
)

log = logging.getLogger(__name__)

oidc_pages = Blueprint("oidc", __name__)

COOKIE = "cadre_oidc"
COOKIE_PATH = "/login/oidc"
#: How long a sign-in may take at the provider.
PENDING_SECONDS = 600
#: What the button says when the settings name no provider.
DEFAULT_NAME = "single sign-on"
#: A sign-in at the provider at most this long ago confirms a risky change for someone
#: without a password of Cadre's (server/security/reauth.py).
RECENT_SECONDS = 300
#: Where they go to sign in again for it: the provider asks them again.
AGAIN_URL = f"{COOKIE_PATH}?again=1"


def clients() -> OidcClients:
    found: OidcClients = current_app.extensions["cadre.oidc"]
    return found


@oidc_pages.get("/api/login/methods")
def methods() -> Response:
    """Whether the login page shows "Log in with <provider>" (and what it says)."""
    settings = load_settings()
    offered = OidcConfig.of(settings) is not None
    name = settings.oidc_provider_name.strip() or DEFAULT_NAME
    return jsonify({"oidc": {"name": name, "url": COOKIE_PATH} if offered else None})


@oidc_pages.get("/login/oidc")
def start() -> Response | tuple[Response, int]:
    settings = load_settings()
    try:
        config = _config(settings)
        again = RECENT_SECONDS if request.args.get("again") else None
        url, pending = begin(clients().client(config), config,
                             url_for("oidc.callback", _external=True), again)  # fmt: skip
    except SignInFailed as exc:
        clients().forget()  # the discovery document is fetched again next time
        return _failed(exc, settings)
    response = redirect(url)
    response.set_cookie(COOKIE, _signer().dumps(asdict(pending)), max_age=PENDING_SECONDS,
                        path=COOKIE_PATH, httponly=True, secure=request.is_secure,
                        samesite="Lax")  # fmt: skip
    return response


@oidc_pages.get("/login/oidc/callback")
def callback() -> Response | tuple[Response, int]:
    settings = load_settings()
    try:
        user, when = _signed_in(settings)
    except UserError as exc:
        return _failed(exc, settings)
    audit.record_request("login", settings, user.name, method="oidc")
    log.info("single sign-on: %r logged in from %s", user.name, _address(settings))
    # When the provider last asked them (an hour-old session there is no proof now).
    signed_in_again(user, when)
    # Not a 302: when the provider showed a page of its own (its login form), a redirect
    # here goes on the navigation that page started, from another site, and the browser
    # leaves the new session's SameSite=Strict cookie out of it: the app would answer with
    # the login page. A page of Cadre's that moves on starts a navigation of Cadre's own.
    response = Response(_ONWARD, mimetype="text/html")
    response.headers["Cache-Control"] = "no-store"
    response.delete_cookie(COOKIE, path=COOKIE_PATH)
    return response


def _signed_in(settings: Settings) -> tuple[User, float | None]:
    """The account the provider's answer vouches for, and when the provider last made the
    person prove who they are (None: it does not say); UserError saying why not."""
    config = _config(settings)
    pending = _pending()
    claims = finish(clients().client(config), config, pending, request.args.to_dict(),
                    (settings.oidc_user_claim, settings.oidc_admin_claim))  # fmt: skip
    email, subject = claims.get("email"), claims.get("sub")
    vouched = Vouched(
        user_name(claims, settings.oidc_user_claim), "oidc",
        is_admin(claims, settings.oidc_admin_claim, settings.oidc_admin_value),
        email if isinstance(email, str) else "",
        # Who the person is: the ID token's issuer (checked against the settings') and
        # subject; the name above is only what their account is called.
        str(claims.get("iss") or config.issuer), subject if isinstance(subject, str) else "",
    )  # fmt: skip
    user = provided_user(identity.accounts().users, vouched, settings.sso_create_users)
    return user, authenticated_at(claims)


def _config(settings: Settings) -> OidcConfig:
    config = OidcConfig.of(settings)
    if config is None:
        raise SignInFailed("single sign-on is not set up here: log in with your password, or "
                           "ask an admin to set the provider in Settings", 404)  # fmt: skip
    if not identity.accounts().required():
        raise SignInFailed("single sign-on needs accounts: an admin first sets a login and "
                           "password in Settings (they become the first admin)", 409)  # fmt: skip
    return config


def _signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(signing_key(), salt="cadre.oidc.pending")


def _pending() -> Pending:
    """The sign-in this browser started, matched against the state that came back."""
    again = "start the sign-in again from the login page"
    try:
        data = _signer().loads(request.cookies.get(COOKIE, ""), max_age=PENDING_SECONDS)
        pending = Pending(**data)
    except SignatureExpired:
        raise SignInFailed(f"the sign-in took longer than {PENDING_SECONDS // 60} minutes: "
                           f"{again}", 400) from None  # fmt: skip
    except (BadSignature, TypeError):
        raise SignInFailed(f"this sign-in was not started in this browser (or its cookie is "
                           f"gone): {again}", 400) from None  # fmt: skip
    state = request.args.get("state", "")
    if not hmac.compare_digest(pending.state.encode(), state.encode()):
        raise SignInFailed(f"the sign-in's state does not match the one this browser sent: "
                           f"{again}", 400, f"state mismatch ({state[:40]!r})")  # fmt: skip
    return pending


def _address(settings: Settings) -> str:
    forwarded = request.headers.get("X-Forwarded-For")
    return client_address(request.remote_addr or "?", forwarded, settings.trusted_proxies)


def _failed(exc: UserError, settings: Settings) -> tuple[Response, int]:
    """The person's page (or JSON) saying what went wrong; the log's line saying more."""
    if isinstance(exc, SignInFailed):
        status, detail = exc.status, exc.detail
    else:  # the account's refusal (accounts/provided.py): disabled, not to be made, no name
        status, detail = (403 if isinstance(exc, Forbidden) else 400), str(exc)
    address = _address(settings)
    log.warning("single sign-on: failed for %s: %s", address, detail)
    if request.endpoint == "oidc.callback":
        audit.record("login_failed", "", address, method="oidc", why=str(exc)[:200])
    if request.accept_mimetypes.accept_html:
        response = Response(_PAGE.format(message=html.escape(str(exc))), mimetype="text/html")
    else:
        response = jsonify({"error": str(exc)})
    response.delete_cookie(COOKIE, path=COOKIE_PATH)  # one answer per sign-in started
    return response, status


#: What a sign-in that worked answers: on to the app at once.
_ONWARD = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta http-equiv="refresh" content="0; url=/">
  <title>Cadre: signed in</title>
  <link rel="stylesheet" href="/css/app.css">
</head>
<body class="login-body">
  <main class="login-form">
    <p>Signed in. <a href="/" data-testid="sso-onward">Go to Cadre</a></p>
  </main>
</body>
</html>
"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Cadre: single sign-on failed</title>
  <link rel="stylesheet" href="/css/app.css">
</head>
<body class="login-body">
  <main class="login-form">
    <h1 class="login-title">Cadre</h1>
    <p class="login-error" role="alert" data-testid="sso-error">{message}</p>
    <a class="btn primary" href="/login">Back to the login page</a>
  </main>
</body>
</html>
"""
