"""Passwords as salted scrypt hashes, checked in constant time.

scrypt, from the standard library (hashlib over OpenSSL), is memory-hard like argon2: a
guess costs 16 MB and about 50 ms, so a stolen users.json is slow to attack, and it adds
no dependency. Every password Cadre ever stored (the single login's too) is in this form,
so the accounts read them as they are.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SCHEME = "scrypt"
#: scrypt cost: about 50 ms and 16 MB per check on this machine.
N, R, P = 2**14, 8, 1
#: Checked against when a name is unknown, so that a wrong name costs as long as a
#: wrong password (no timing tells names apart).
_NOBODY = ""


def hash_password(password: str) -> str:
    """`scrypt$<salt>$<hash>`, both base64."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=N, r=R, p=P, dklen=32)
    return f"{SCHEME}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def is_hashed(stored: str) -> bool:
    return stored.startswith(f"{SCHEME}$") and stored.count("$") == 2


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check against a stored hash (or a plain password from the environment).
    An empty `stored` (no password: a single sign-on user) never matches, after the
    same work as a real check."""
    global _NOBODY
    if not stored:
        if not _NOBODY:
            _NOBODY = hash_password(secrets.token_urlsafe(16))
        verify_password(password, _NOBODY)
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
