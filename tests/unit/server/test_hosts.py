"""The host allowlist, the origin check and the client address behind proxies."""

from __future__ import annotations

import json
import logging

import pytest
from werkzeug.test import EnvironBuilder, run_wsgi_app

from server.security.forwarded import client_address
from server.security.hosts import LOGGED_NAMES, HostGuard, HostName, HostPolicy, parse_host
from server.security.throttle import Throttle

POLICY = HostPolicy(
    "127.0.0.1", 5080, lambda: ["cadre.lan", "https://proxy.example:8443/", "tls.example:443"]
)


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        ("LocalHost.:5080", HostName("localhost", 5080)),
        ("[::1]:80", HostName("::1", 80)),
        ("[::1]", HostName("::1")),
        ("cadre.lan", HostName("cadre.lan")),
        ("", None), (None, None), ("x.test:", None), ("x.test:99999", None),
        ("x.test:8o", None), ("[localhost]:80", None), ("[::1]x", None),
        ("x.test:0", None), ("x.test:65535", HostName("x.test", 65535)), ("x.test:65536", None),
    ],
)  # fmt: skip
def test_host_headers_are_parsed_strictly(header, parsed):
    assert parse_host(header) == parsed


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("localhost:1", True), ("127.0.0.2", True), ("[::1]:9", True), ("cadre.lan:7", True),
        ("proxy.example:8443", True), ("proxy.example:9", False),
        # An entry's port is the only one: a Host without a port means the scheme's default,
        # which 8443 is not (443 is: a browser leaves it out).
        ("proxy.example", False), ("tls.example", True), ("tls.example:443", True),
        ("tls.example:8443", False),
        ("rebind.attacker.test:5080", False), ("localhost.attacker.test", False),
        ("127.0.0.1.nip.io", False), ("192.168.1.5:5080", False),
        # A Host that is no name at all is refused, never taken for an allowed one.
        ("", False), (None, False), ("localhost:99999", False), ("[localhost]", False),
    ],
)  # fmt: skip
def test_only_allowed_names_are_answered(header, allowed):
    assert POLICY.allows_host(header) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:5080", True), ("http://[::1]:5080", True),
        ("http://localhost:5081", False),  # another local program's page
        ("http://cadre.lan", True), ("https://cadre.lan", True), ("http://cadre.lan:5080", True),
        ("http://cadre.lan:81", False), ("https://proxy.example:8443", True),
        ("https://proxy.example", False), ("null", False), ("", False), (None, False),
        ("http://rebind.attacker.test:5080", False), ("http://127.0.0.1:5080/x", False),
        ("http://u@localhost:5080", False), ("ftp://localhost:5080", False),
        ("http://localhost:5080/", True), ("http://localhost.:5080", True),
        # A port that is no port, and a query or a fragment: no page's origin is written so.
        ("http://localhost:99999", False), ("http://[::1:5080", False),
        ("http://localhost:5080?x", False), ("http://localhost:5080#x", False),
    ],
)  # fmt: skip
def test_origins_must_name_an_allowed_host_and_port(origin, allowed):
    assert POLICY.allows_origin(origin) is allowed


def test_socketio_asks_the_same_origin_check():
    assert POLICY.engineio_origin_check("http://localhost:5080", {})
    assert not POLICY.engineio_origin_check("http://rebind.attacker.test:5080", {})


def test_serving_on_every_interface_allows_ip_addresses_but_no_new_names():
    everywhere = HostPolicy("0.0.0.0", 5080, lambda: [])
    assert everywhere.allows_host("192.168.1.5:5080") and everywhere.allows_host("[fe80::1]")
    assert not everywhere.allows_host("box.lan:5080")
    assert everywhere.allows_origin("http://192.168.1.5:5080")
    named = HostPolicy("box.lan", 5080, lambda: [])
    assert named.allows_host("box.lan:5080") and not named.allows_host("192.168.1.5")


def reached() -> tuple[object, list[str]]:
    """A WSGI app, and the Host of each request it was handed."""
    hosts: list[str] = []

    def app(env, start_response):  # type: ignore[no-untyped-def]
        hosts.append(env.get("HTTP_HOST"))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"the app"]

    return app, hosts


def ask(guard: HostGuard, host: str | None, remote: str = "10.0.0.7") -> tuple[str, bytes]:
    environ = EnvironBuilder(path="/api/settings", environ_base={"REMOTE_ADDR": remote},
                             headers={"Host": host or ""}).get_environ()  # fmt: skip
    if host is None:
        del environ["HTTP_HOST"]
    body, status, headers = run_wsgi_app(guard, environ, buffered=True)
    if not status.startswith("200 "):  # a refusal, for the page's fetch to read
        assert headers["Content-Type"] == "application/json"
    return status, b"".join(body)


def test_the_guard_hands_on_only_requests_for_an_allowed_host(caplog):
    """A rebinding name gets a 421 saying why, a missing or malformed Host a 400; neither
    reaches the app. Each refused name is logged once as a warning with who asked."""
    app, hosts = reached()
    guard = HostGuard(app, POLICY)
    assert ask(guard, "localhost:5080") == ("200 OK", b"the app")
    assert ask(guard, "cadre.lan") == ("200 OK", b"the app")
    caplog.set_level(logging.DEBUG, logger="server.security.hosts")
    status, body = ask(guard, "rebind.attacker.test:5080")
    assert status.startswith("421 ")
    assert json.loads(body)["error"] == (
        "refused a request for host 'rebind.attacker.test:5080': Cadre answers only to loopback"
        " names, the address it serves on and the names in the allowed_hosts setting"
    )
    for host, shown in ((None, "''"), ("a.test:99999", "'a.test:99999'")):
        status, body = ask(guard, host)
        assert status.startswith("400 ")
        assert json.loads(body)["error"] == f"missing or malformed Host header {shown}"
    assert hosts == ["localhost:5080", "cadre.lan"]  # nothing refused reached the app
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        f"refused a request for host {shown} from 10.0.0.7 (DNS rebinding, or a name missing"
        " from the allowed_hosts setting); further ones for it are logged at debug level"
        for shown in ("'rebind.attacker.test:5080'", "''", "'a.test:99999'")
    ]


def test_the_guard_warns_once_a_name_and_for_a_bounded_number_of_names(caplog):
    """A page can send thousands of names: each is a warning once, then debug; past
    LOGGED_NAMES names every refusal is at debug level (the log stays readable)."""
    guard = HostGuard(reached()[0], POLICY)
    caplog.set_level(logging.DEBUG, logger="server.security.hosts")
    ask(guard, "one.test", "10.0.0.8")
    ask(guard, "one.test", "10.0.0.9")
    first, again = caplog.records
    assert first.levelno == logging.WARNING and again.levelno == logging.DEBUG
    assert again.getMessage() == "refused a request for host 'one.test' from 10.0.0.9"
    for number in range(LOGGED_NAMES + 5):
        ask(guard, f"n{number}.test")
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == LOGGED_NAMES
    assert "'n254.test'" in warned[-1].getMessage()  # one.test and n0..n254 were warned of


@pytest.mark.parametrize(
    ("remote", "forwarded", "client"),
    [
        ("10.0.0.9", "1.2.3.4", "10.0.0.9"),  # not a trusted proxy: the header is ignored
        ("127.0.0.1", None, "127.0.0.1"),
        ("127.0.0.1", "1.2.3.4", "1.2.3.4"),
        ("127.0.0.1", "6.6.6.6, 1.2.3.4", "1.2.3.4"),  # the client wrote the left part
        ("127.0.0.1", "1.2.3.4, 10.1.0.1", "1.2.3.4"),  # through a second trusted proxy
        ("127.0.0.1", "10.1.0.1", "10.1.0.1"),  # only proxies: the leftmost
    ],
)  # fmt: skip
def test_the_client_address_comes_from_x_forwarded_for_only_behind_a_trusted_proxy(
    remote, forwarded, client
):
    assert client_address(remote, forwarded, ["127.0.0.1", "10.1.0.0/16", "not an ip"]) == client


def test_an_attempt_is_counted_before_it_is_checked():
    throttle = Throttle(limit=2, window=60)
    assert throttle.admit(["address a", "account x"]) == 0
    assert throttle.admit(["address a", "account y"]) == 0
    wait = throttle.admit(["address a", "account z"])
    assert 59 < wait <= 60  # address a is full; nothing was counted for account z
    assert throttle.admit(["address b", "account z"]) == 0
    throttle.succeeded(["address a"])
    assert throttle.admit(["address a", "account w"]) == 0
