"""The host allowlist, the origin check and the client address behind proxies."""

from __future__ import annotations

import pytest

from server.hosts import HostName, HostPolicy, parse_host
from server.throttle import Throttle, client_address

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
    ],
)  # fmt: skip
def test_origins_must_name_an_allowed_host_and_port(origin, allowed):
    assert POLICY.allows_origin(origin) is allowed


def test_serving_on_every_interface_allows_ip_addresses_but_no_new_names():
    everywhere = HostPolicy("0.0.0.0", 5080, lambda: [])
    assert everywhere.allows_host("192.168.1.5:5080") and everywhere.allows_host("[fe80::1]")
    assert not everywhere.allows_host("box.lan:5080")
    assert everywhere.allows_origin("http://192.168.1.5:5080")
    named = HostPolicy("box.lan", 5080, lambda: [])
    assert named.allows_host("box.lan:5080") and not named.allows_host("192.168.1.5")


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
