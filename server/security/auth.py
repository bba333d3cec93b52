"""Who may use the UI: an optional login, CSRF tokens, and the session's secret key.

Once an account exists (accounts/: the settings' login is the first admin), every page
route, API route of the page and Socket.IO connection needs a logged-in session of an
enabled user (server/security/sessions.py); `/health`, the login page, its static files
and the CSRF token do not. Passwords are stored as salted scrypt hashes
(accounts/passwords.py) and compared in constant time; logins are throttled
(server/security/throttle.py). State-changing requests of the page carry a CSRF token
in a header: the token is in the session and handed out by `GET /api/csrf`,
an answer only a page of an allowed origin can read (no CORS, and a
rebinding name is refused before any route runs).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from accounts.keys import new_key
from accounts.passwords import hash_password, is_hashed, verify_password
from helpers.files import usr_path

__all__ = ["hash_password", "is_hashed", "verify_password", "new_api_key", "secret_key"]

CSRF_HEADER = "X-CSRF-Token"
#: The cookie of a browser that logged in before (server/security/devices.py).
DEVICE_COOKIE = "cadre_device"


def new_api_key() -> str:
    """A fresh key for the external API (32 URL-safe characters)."""
    return new_key()


def secret_key() -> bytes:
    """The session-signing key: random, made once, kept in usr/ (owner-only).

    Every process sharing usr/ (the nodes of a cluster) reads the same key, so a cookie one
    signed is good on all. The key is written whole beside its place and then linked there,
    which fails if another process made it first: a process starting at the same moment
    never reads a key made but not yet written (it would sign with an empty key, whose
    cookies no other node takes)."""
    path = usr_path("secret_key")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".secret_key.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            with open(draft, "xb") as handle:
                draft.chmod(0o600)
                handle.write(secrets.token_bytes(32))
            os.link(draft, path)
        except FileExistsError:
            pass  # another process made it first: theirs is the key
        except OSError:  # a file system without hard links: made in place, as it was
            _made_in_place(path, draft.read_bytes())
        finally:
            draft.unlink(missing_ok=True)
    return path.read_bytes()


def _made_in_place(path: Path, key: bytes) -> None:
    try:
        with open(path, "xb") as handle:
            path.chmod(0o600)
            handle.write(key)
    except FileExistsError:
        pass  # another process made it first
