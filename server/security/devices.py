"""Browsers that logged in before: a signed cookie that lets their owner past a lock-out.

Someone guessing passwords fills the throttle's keys for the address and the
account they guess from, which would shut the owner out too (behind a proxy,
or on the same network, they share the address). A browser that once logged
in holds a device cookie, and its attempts are counted under that device's
own key instead, so the owner's password still gets checked while strangers
wait. The cookie is signed with the session key, bound to the credentials
(a password change voids it) and sent to /login only.
"""

from __future__ import annotations

import secrets

from flask import Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

from server.security.auth import DEVICE_COOKIE

#: How long a browser is remembered after its last login.
MAX_AGE = 365 * 24 * 3600
SALT = "cadre-device"


def _serializer(key: bytes) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(key, salt=SALT)


def device_id(cookie: str | None, key: bytes, stamp: str) -> str | None:
    """The device the cookie names, if it is genuine, recent and of these credentials."""
    if not cookie:
        return None
    try:
        data = _serializer(key).loads(cookie, max_age=MAX_AGE)
    except BadSignature:
        return None
    if not isinstance(data, dict) or data.get("stamp") != stamp:
        return None
    found = data.get("id")
    return found if isinstance(found, str) and found else None


def remember(response: Response, device: str | None, key: bytes, stamp: str, secure: bool) -> None:
    """Give the browser (again) its device cookie after a successful login."""
    value = _serializer(key).dumps({"id": device or secrets.token_urlsafe(16), "stamp": stamp})
    response.set_cookie(
        DEVICE_COOKIE, value, max_age=MAX_AGE, path="/login", secure=secure, httponly=True,
        samesite="Strict",
    )  # fmt: skip
