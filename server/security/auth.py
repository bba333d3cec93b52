"""Who may use the UI: an optional login, CSRF tokens, and the session's secret key.

With `auth_login` set, every page route, API route of the page and Socket.IO
connection needs a logged-in session (server/security/sessions.py); `/health`, the
login page, its static files and the CSRF token do not. Passwords are stored
as salted scrypt hashes and compared in constant time; logins are throttled
(server/security/throttle.py). State-changing requests of the page carry a CSRF token
in a header: the token is in the session and handed out by `GET /api/csrf`,
an answer only a page of an allowed origin can read (no CORS, and a
rebinding name is refused before any route runs).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from helpers.files import usr_path
from helpers.settings import Settings

SCHEME = "scrypt"
#: scrypt cost: about 50 ms and 16 MB per check on this machine.
N, R, P = 2**14, 8, 1
CSRF_HEADER = "X-CSRF-Token"
#: The cookie of a browser that logged in before (server/security/devices.py).
DEVICE_COOKIE = "cadre_device"


def hash_password(password: str) -> str:
    """`scrypt$<salt>$<hash>`, both base64."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=N, r=R, p=P, dklen=32)
    return f"{SCHEME}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def is_hashed(stored: str) -> bool:
    return stored.startswith(f"{SCHEME}$") and stored.count("$") == 2


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check against a stored hash (or a plain password from the environment)."""
    if not stored:
        return False
    if not is_hashed(stored):
        return hmac.compare_digest(password.encode(), stored.encode())
    _, salt, digest = stored.split("$")
    try:
        expected = base64.b64decode(digest)
        candidate = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=N, r=R, p=P, dklen=len(expected)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(candidate, expected)


def new_api_key() -> str:
    """A fresh key for the external API (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def login_required(settings: Settings) -> bool:
    return bool(settings.auth_login)


def secret_key() -> bytes:
    """The session-signing key: random, made once, kept in usr/ (owner-only)."""
    path = usr_path("secret_key")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "xb") as handle:
                path.chmod(0o600)
                handle.write(secrets.token_bytes(32))
        except FileExistsError:
            pass  # another process made it first
    return path.read_bytes()
