"""Requests one node hands to another: signed, so that a node believes only its peers.

A node that gets a request for a chat another node runs hands the request over
(server/cluster/relay.py). The node that gets it must know that the request comes from a
peer and who the person behind it is (a page's login lives in the node it logged in to),
so the handing node adds one header, `X-Cadre-Relay`, signed with the cluster's secret
(an HMAC-SHA256 over the node, the time, a fresh nonce, the method, the path with its
query, the person and a digest of the body). The secret is made once by the first node
and kept in Redis, which only the nodes reach; a nonce is accepted once, and a header
older than `MAX_AGE` seconds not at all, so a header overheard cannot be replayed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

HEADER = "X-Cadre-Relay"
#: Seconds a signed header is good for (the nodes' clocks agree within it: NTP).
MAX_AGE = 30.0


class BadRelay(Exception):  # noqa: N818 - a refusal, said in its text
    """The header is not one a peer signed now."""


@dataclass(frozen=True)
class Relayed:
    """What a peer's header says: who handed the request on, for whom, with which nonce."""

    node: str
    #: The person it acts for ("" for nobody: the desktop mode, or an API call with a key).
    user: str
    nonce: str


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def _mac(secret: str, parts: list[str], body: bytes) -> str:
    message = "\n".join([*parts, hashlib.sha256(body).hexdigest()]).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def sign(secret: str, node: str, method: str, target: str, user: str, body: bytes,
         now: float | None = None) -> str:  # fmt: skip
    """The header's value for a request of `method` to `target` (path and query)."""
    stamp = f"{now if now is not None else time.time():.3f}"
    nonce = secrets.token_hex(12)
    mac = _mac(secret, [node, stamp, nonce, method.upper(), target, user], body)
    return ";".join([_b64(node), stamp, nonce, _b64(user), mac])


def verify(secret: str, value: str, method: str, target: str, body: bytes,
           now: float | None = None) -> Relayed:  # fmt: skip
    """What a valid header says; BadRelay (in words) for any other."""
    try:
        node_b64, stamp, nonce, user_b64, mac = value.split(";")
        node = base64.urlsafe_b64decode(node_b64.encode()).decode()
        user = base64.urlsafe_b64decode(user_b64.encode()).decode()
        when = float(stamp)
    except (ValueError, UnicodeDecodeError):
        raise BadRelay("the relay header is malformed") from None
    if abs((now if now is not None else time.time()) - when) > MAX_AGE:
        raise BadRelay("the relay header is too old (or the nodes' clocks differ)")
    expected = _mac(secret, [node, stamp, nonce, method.upper(), target, user], body)
    if not hmac.compare_digest(expected, mac):
        raise BadRelay("the relay header's signature is wrong")
    return Relayed(node, user, nonce)
