"""Who may use the UI: an optional login, CSRF tokens, and the session's secret key.

With `auth_login` set, every page route, API route of the page and Socket.IO
connection needs a logged-in session; `/health`, the login page and its
static files do not. Passwords are stored as salted scrypt hashes and
compared in constant time; failed logins from one address are throttled.
State-changing requests of the page carry a CSRF token (double submit: a
cookie the page reads and the header it sends back, matched against the
session).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections import deque

from helpers.files import usr_path
from helpers.settings import Settings

SCHEME = "scrypt"
#: scrypt cost: about 50 ms and 16 MB per check on this machine.
N, R, P = 2**14, 8, 1
#: Failed logins from one address within WINDOW seconds before it must wait.
MAX_FAILURES, WINDOW = 5, 300.0
CSRF_COOKIE = "cadre_csrf"
CSRF_HEADER = "X-CSRF-Token"


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


class Throttle:
    """Failed logins per address; too many in a window and the address waits."""

    def __init__(self) -> None:
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_for(self, address: str) -> float:
        """Seconds `address` must still wait (0: it may try)."""
        now = time.monotonic()
        with self._lock:
            recent = self._failures.get(address, deque())
            while recent and now - recent[0] > WINDOW:
                recent.popleft()
            if len(recent) < MAX_FAILURES:
                return 0.0
            return WINDOW - (now - recent[0])

    def failed(self, address: str) -> None:
        with self._lock:
            self._failures.setdefault(address, deque()).append(time.monotonic())

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
