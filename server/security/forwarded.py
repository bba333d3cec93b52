"""What a trusted reverse proxy says of a request: who the client is (`X-Forwarded-For`)
and whether the browser's own connection was HTTPS (`X-Forwarded-Proto`).

Anyone may write these headers, so they are believed only when the connection comes
from a proxy of the `trusted_proxies` setting, and then only the nearest proxy's word:
a proxy appends what it saw, so what the client wrote itself is further left and never
chosen over it. Behind such a proxy over HTTPS the session cookie is marked Secure and
the browser is told to keep to HTTPS (server/security/guard.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

#: Longest address kept: a header may hold anything.
ADDRESS_CHARS = 100

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(entries: Iterable[str]) -> list[Network]:
    found = []
    for entry in entries:
        try:
            found.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            continue  # not an address: Settings shows what was stored
    return found


def within(address: str, among: list[Network]) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in among)


def client_address(remote: str, forwarded_for: str | None, trusted_proxies: Iterable[str]) -> str:
    """Who sent the request: `remote`, unless a trusted proxy forwarded it for someone."""
    trusted = networks(trusted_proxies)
    if not forwarded_for or not within(remote, trusted):
        return remote[:ADDRESS_CHARS]
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not within(hop, trusted):
            return hop[:ADDRESS_CHARS]
    return (hops[0] if hops else remote)[:ADDRESS_CHARS]


def came_over_https(
    remote: str, forwarded_proto: str | None, trusted_proxies: Iterable[str]
) -> bool:
    """Did the browser reach the trusted proxy `remote` over HTTPS (its `X-Forwarded-Proto`)?"""
    if not forwarded_proto or not within(remote, networks(trusted_proxies)):
        return False
    return forwarded_proto.split(",")[-1].strip().lower() == "https"


class ForwardedScheme:
    """WSGI middleware: a request a trusted proxy took over HTTPS is an HTTPS request to
    everything inside (Flask's `request.is_secure`, Socket.IO's)."""

    def __init__(self, app: Callable[..., Any], trusted: Callable[[], list[str]]) -> None:
        self.app = app
        #: The `trusted_proxies` setting, read when a request says it was forwarded.
        self.trusted = trusted

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        proto = environ.get("HTTP_X_FORWARDED_PROTO")
        if proto and came_over_https(environ.get("REMOTE_ADDR", ""), proto, self.trusted()):
            environ = {**environ, "wsgi.url_scheme": "https"}
        return self.app(environ, start_response)
