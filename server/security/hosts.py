"""Which `Host` names may reach Cadre, and which page origins may talk to it.

A DNS-rebinding page (a name of the attacker's, made to point at 127.0.0.1)
reaches Cadre with that name in `Host` and in `Origin`, so neither header may
be trusted because it matches the other. Cadre answers only to names an
attacker cannot point at it: loopback names and addresses, the address it was
told to serve on, and the names of the `allowed_hosts` setting. `HostGuard`
checks `Host` around the whole WSGI app (Flask routes, static files and the
Socket.IO endpoint), before any other code sees the request.

An `Origin` (a page's scheme, name and port) must name an allowed host on the
port Cadre serves on, or on the port of its `allowed_hosts` entry (a reverse
proxy's): another local program's page on 127.0.0.1:8000 is another origin.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from werkzeug.wrappers import Response

from helpers.settings import load_settings

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost"})
#: Addresses that mean "every interface of this machine".
WILDCARDS = frozenset({"0.0.0.0", "::"})
DEFAULT_PORTS = {"http": 80, "https": 443}
#: Distinct refused names logged as warnings (then quietly: a page can send thousands).
LOGGED_NAMES = 256


@dataclass(frozen=True)
class HostName:
    name: str
    port: int | None = None


def parse_host(value: str | None) -> HostName | None:
    """`name`, `name:port`, `[v6]` or `[v6]:port`, lower-cased; None when malformed."""
    value = (value or "").strip().lower()
    port_text: str | None = None
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[1:end], value[end + 1 :]
        if end < 0 or _address(name) is None or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    else:
        name = value  # a name without a port, or a bare IPv6 address
    name = name.rstrip(".")
    if not name:
        return None
    if port_text is None:
        return HostName(name)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return HostName(name, int(port_text))


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _entry(text: str) -> HostName | None:
    """An `allowed_hosts` entry: a name with an optional port (a scheme or path is ignored)."""
    text = text.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    return parse_host(text.split("/", 1)[0])


@dataclass
class HostPolicy:
    """The allowlist: loopback, the address served on, and `allowed_hosts` (read per check,
    so a change in Settings applies at once)."""

    serve_host: str = "127.0.0.1"
    serve_port: int = 5080
    allowed_hosts: Callable[[], Iterable[str]] = field(
        default=lambda: load_settings().allowed_hosts
    )

    def _own(self, name: str) -> bool:
        """Loopback, the address Cadre serves on; for a wildcard address, any IP address.
        (An IP address in `Host` cannot be rebound: no DNS name is involved.)"""
        address = _address(name)
        if name in LOOPBACK_NAMES or (address is not None and address.is_loopback):
            return True
        served = self.serve_host.strip("[]").lower()
        if served in WILDCARDS:
            return address is not None
        return name == served.rstrip(".")

    def _entries(self) -> list[HostName]:
        return [e for e in (_entry(text) for text in self.allowed_hosts()) if e is not None]

    def allows_host(self, header: str | None) -> bool:
        """May a request with this `Host` header be answered? Any port of an allowed name
        (a proxy may listen elsewhere), unless its `allowed_hosts` entry names one."""
        host = parse_host(header)
        if host is None:
            return False
        if self._own(host.name):
            return True
        for entry in self._entries():
            if entry.name == host.name:
                if entry.port is None or entry.port == host.port:
                    return True
                if host.port is None and entry.port in DEFAULT_PORTS.values():
                    return True
        return False

    def allows_origin(self, origin: str | None) -> bool:
        """May a page of this `Origin` (scheme://name[:port]) drive Cadre?"""
        try:
            parts = urlsplit((origin or "").strip().lower())
            port = parts.port or DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            return False
        name = (parts.hostname or "").rstrip(".")
        if parts.scheme not in DEFAULT_PORTS or not name or parts.path not in ("", "/"):
            return False
        if parts.username is not None or parts.query or parts.fragment:
            return False
        if self._own(name):
            return port == self.serve_port
        for entry in self._entries():
            if entry.name != name:
                continue
            ports = {entry.port} if entry.port else {self.serve_port, DEFAULT_PORTS[parts.scheme]}
            if port in ports:
                return True
        return False

    def engineio_origin_check(self, origin: str | None, _environ: Any = None) -> bool:
        """The form python-engineio's `cors_allowed_origins` callable takes."""
        return self.allows_origin(origin)


class HostGuard:
    """WSGI middleware: a request for a host not in the allowlist gets a 421 and no further."""

    def __init__(self, app: Callable[..., Any], policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy
        self._logged: set[str] = set()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        host = environ.get("HTTP_HOST")
        if self.policy.allows_host(host):
            return self.app(environ, start_response)
        shown = repr((host or "")[:100])
        self._log(shown, environ.get("REMOTE_ADDR", "?"))
        if parse_host(host) is None:
            status, error = 400, f"missing or malformed Host header {shown}"
        else:
            status = 421  # Misdirected Request: this server does not serve that name
            error = (
                f"refused a request for host {shown}: Cadre answers only to loopback names, "
                "the address it serves on and the names in the allowed_hosts setting"
            )
        body = json.dumps({"error": error})
        return Response(body, status=status, mimetype="application/json")(environ, start_response)

    def _log(self, shown: str, remote: str) -> None:
        if shown in self._logged or len(self._logged) >= LOGGED_NAMES:
            log.debug("refused a request for host %s from %s", shown, remote)
            return
        self._logged.add(shown)
        log.warning(
            "refused a request for host %s from %s (DNS rebinding, or a name missing from "
            "the allowed_hosts setting); further ones for it are logged at debug level",
            shown, remote,
        )  # fmt: skip
