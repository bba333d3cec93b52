"""The outbound policy: which addresses the agents may reach (browser, document_query, MCP).

One setting (`outbound_private`) says whether loopback and private addresses
are allowed: `auto` allows them while Cadre serves only on a loopback address
(a developer testing a local app is the common case) and refuses them when it
serves other addresses (then a page or document fetched for one user could
reach the machine's neighbours); `allow` and `refuse` say so always. Cadre's
own ports (helpers/own_ports.py: the web server, the local model's server, the
browsers' proxies) are refused on every address of this machine whatever the
setting says: an agent reaching Cadre's API could change its settings.

A host name is resolved and every address it resolves to is checked, so a
name pointing at 127.0.0.1 is refused like 127.0.0.1 itself; callers that can
see the address they finally connected to check it too (DNS rebinding).
`file://` URLs are allowed only inside the work folder.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import socket
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

from helpers import own_ports
from helpers.confine import PathRefused, resolve_inside
from helpers.errors import UserError
from helpers.folders import work_dir

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from helpers.settings import Settings

PrivateMode = Literal["auto", "allow", "refuse"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Schemes that fetch from the network.
NETWORK_SCHEMES = ("http", "https", "ws", "wss")


class OutboundRefused(UserError):
    """A URL or address the outbound policy does not allow."""


def serves_loopback_only(host: str) -> bool:
    """Whether serving on `host` (run_ui's --host) keeps Cadre on this machine."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True)
class OutboundPolicy:
    """The policy in force: the setting, where Cadre serves, and the work folder."""

    private: PrivateMode = "auto"
    #: Cadre serves only on a loopback address (run_ui.py --host).
    loopback_only: bool = True
    #: The folder `file://` URLs may name (None: no file URL is allowed).
    work_dir: Path | None = None

    @property
    def private_allowed(self) -> bool:
        if self.private == "auto":
            return self.loopback_only
        return self.private == "allow"

    def check_address(self, address: str, url: str = "", port: int | None = None) -> None:
        """Refuse a loopback, private, link-local or otherwise non-public address unless
        allowed, and Cadre's own ports on this machine. `url` names what led there, for the
        message; `port` is where the connection goes (None: not known yet)."""
        ip = _parse_ip(address)
        if ip is None:
            return
        where = f"{url} resolves to {ip}" if url else str(ip)
        if port is not None and port in own_ports.listening() and is_this_machine(ip):
            raise OutboundRefused(
                f"{where}, port {port}: that is Cadre's own server on this machine, which "
                "agents may not reach (what they could do there, only a person may)"
            )
        if _is_public(ip) or self.private_allowed:
            return
        raise OutboundRefused(
            f"{where}, a local or private address: refused because Cadre serves other "
            "addresses than 127.0.0.1 (setting outbound_private, now "
            f"{self.private!r}; 'allow' permits it)"
            if self.private == "auto"
            else f"{where}, a local or private address: refused by the setting "
            "outbound_private ('allow' or 'auto' permits it)"
        )

    def check_url(self, url: str) -> list[str]:
        """Check `url` (resolving its host): the addresses it resolves to, all allowed.

        A `file://` URL must name a path inside the work folder (returns []).
        Other schemes than http(s), ws(s) and file are refused.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "file":
            self.check_file(url)
            return []
        if scheme not in NETWORK_SCHEMES:
            raise OutboundRefused(f"{url[:200]}: only http(s) and file URLs can be opened")
        host = parts.hostname
        if not host:
            raise OutboundRefused(f"{url[:200]}: the URL names no host")
        port = parts.port or (443 if scheme in ("https", "wss") else 80)
        addresses = resolve(host, port)
        for address in addresses:
            self.check_address(address, url[:200], port)
        return addresses

    def check_file(self, url: str) -> Path:
        """The path of a `file://` URL inside the work folder; refused elsewhere."""
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise OutboundRefused(f"{url[:200]}: a file URL must name a local file")
        if self.work_dir is None:
            raise OutboundRefused(f"{url[:200]}: file URLs are not allowed here")
        try:
            return resolve_inside(unquote(parts.path), self.work_dir)
        except PathRefused as exc:
            raise OutboundRefused(
                f"{url[:200]}: file URLs may only name files in the work folder ({exc})"
            ) from None


def resolve(host: str, port: int = 80) -> list[str]:
    """Every address `host` resolves to (an address literal is itself)."""
    literal = _parse_ip(host)
    if literal is not None:
        return [str(literal)]
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise OutboundRefused(f"cannot resolve {host!r}: {exc}") from None
    return sorted({str(info[4][0]).split("%")[0] for info in found})


#: IPv6 prefixes whose last 32 bits are an IPv4 address: IPv4-compatible, SIIT, NAT64 (both).
_CARRY_IPV4 = tuple(
    ipaddress.IPv6Network(net)
    for net in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48")
)
_SPECIAL = (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1"))


def _parse_ip(text: str) -> IPAddress | None:
    """The address `text` names; an IPv6 one that carries an IPv4 address (::ffff:127.0.0.1,
    6to4 2002:7f00:1::, NAT64 64:ff9b::7f00:1...) is that IPv4 address, judged as such."""
    try:
        ip = ipaddress.ip_address(text.strip("[]").split("%")[0])
    except ValueError:
        return None
    if not isinstance(ip, ipaddress.IPv6Address) or ip in _SPECIAL:
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _CARRY_IPV4):
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return ip


def is_this_machine(ip: IPAddress) -> bool:
    """Whether a connection to `ip` reaches this machine: loopback, the unspecified address
    (which Linux takes for this machine) or an address of one of its interfaces (one a socket
    can be bound to)."""
    if ip.is_loopback or ip.is_unspecified:
        return True
    family = socket.AF_INET6 if isinstance(ip, ipaddress.IPv6Address) else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:  # EADDRNOTAVAIL: not an address of this machine
        return False
    return True


def _is_public(ip: IPAddress) -> bool:
    """Reachable on the internet: not loopback, private, link-local (cloud metadata),
    shared (CGNAT), reserved, multicast or unspecified."""
    return ip.is_global and not ip.is_multicast


def open_url(policy: OutboundPolicy, url: str, timeout: float) -> IO[bytes]:
    """GET `url` (http or https) under `policy`: the URL is checked, then the address each
    connection (redirects too) actually reached, before a request is sent on it. No proxy
    from the environment is used: the address checked is the one that is talked to."""
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise OutboundRefused(f"{url[:200]}: only http(s) URLs can be fetched")
    policy.check_url(url)  # a clear refusal before anything is sent
    opener = urllib.request.OpenerDirector()
    for handler in (_CheckedHTTP(policy), _CheckedHTTPS(policy), _HttpRedirects(),
                    urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPErrorProcessor()):  # fmt: skip
        opener.add_handler(handler)
    return opener.open(url, timeout=timeout)  # type: ignore[no-any-return]


def _checked(base: type[http.client.HTTPConnection], policy: OutboundPolicy) -> Any:
    """`base` whose connection is refused when its peer's address is not allowed."""

    class Checked(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            try:
                peer = self.sock.getpeername()
                policy.check_address(peer[0], f"{self.host}", peer[1])
            except OutboundRefused:
                self.close()
                raise

    return Checked


class _CheckedHTTP(urllib.request.HTTPHandler):
    def __init__(self, policy: OutboundPolicy) -> None:
        super().__init__()
        self._connection = _checked(http.client.HTTPConnection, policy)

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection, req)


class _CheckedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, policy: OutboundPolicy) -> None:
        super().__init__()
        self._connection = _checked(http.client.HTTPSConnection, policy)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connection, req)


class _HttpRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects stay on http(s) (urllib would follow one to ftp://)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise OutboundRefused(f"{req.full_url[:200]} redirects to {newurl[:200]}: refused")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def policy(settings: Settings, loopback_only: bool, space: Path | None = None) -> OutboundPolicy:
    """The policy in force for the agents of `space`'s owner with `settings` while Cadre
    serves as `loopback_only` says: file URLs reach their work folder only. A work folder
    refused now (helpers/exposure.py) allows no file URL; the rest holds."""
    try:
        work: Path | None = work_dir(settings.work_dir, space)
    except UserError as exc:
        log.warning("file URLs refused: %s", exc)
        work = None
    return OutboundPolicy(settings.outbound_private, loopback_only, work)
