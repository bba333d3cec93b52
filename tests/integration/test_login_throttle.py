"""The login throttle against a real run_ui.py: counted before the password check,
per account and per address, never locking the owner's browser out, proxy-aware."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest
import requests

from server.security import auth
from server.security.throttle import MAX_ATTEMPTS
from tests.support.agents import wait_for
from tests.support.live_web import cookie_header, csrf_token, live_server, log_in, log_text

PASSWORD = "correct horse"
CHECKED = "login: wrong login or password"


@pytest.fixture
def cadre(tmp_path, _fake_llm_server):
    # A hashed password: each check costs a real scrypt run, the window a race needs.
    server = live_server(tmp_path, _fake_llm_server.base_url, auth_login="ada",
                         auth_password=auth.hash_password(PASSWORD))  # fmt: skip
    yield server
    server.stop()


def wrong_logins(cadre, count: int, login: str = "ada", **headers: str) -> list[int]:
    """`count` wrong logins at once, each from a browser of its own. Each is sent but for
    its body's last byte; the last bytes go only once the server has read all the rest of
    every one, so that every request waits in the login route, before the throttle, and
    all go on together (not as fast as threads here happen to send them)."""
    held = [_held_login(cadre, login, headers) for _ in range(count)]
    ports = {connection.getsockname()[1] for connection in held}
    wait_for(lambda: _read_but_the_last_byte(cadre.port, ports), timeout=60,
             what="the server reading every login but its last byte")  # fmt: skip
    for connection in held:
        connection.sendall(b"}")
    statuses = []
    for connection in held:
        answer = http.client.HTTPResponse(connection)
        answer.begin()
        statuses.append(answer.status)
        connection.close()
    return statuses


def _held_login(cadre, login: str, headers: dict[str, str]) -> socket.socket:
    """A connection that sent a wrong login (session cookie and CSRF token of a browser of
    its own) but for the body's closing brace."""
    browser = requests.Session()
    token = csrf_token(browser, cadre)
    body = json.dumps({"login": login, "password": "guess"}).encode()
    lines = [
        "POST /login HTTP/1.1", f"Host: 127.0.0.1:{cadre.port}",
        "Content-Type: application/json", f"Content-Length: {len(body)}",
        f"X-CSRF-Token: {token}", f"Cookie: {cookie_header(browser)}", "Connection: close",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]  # fmt: skip
    connection = socket.create_connection(("127.0.0.1", cadre.port), timeout=60)
    connection.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body[:-1])
    return connection


def _read_but_the_last_byte(port: int, clients: set[int]) -> bool:
    """Has the server read everything each of `clients` (local ports) sent? The kernel's
    table of TCP sockets says how much each connection holds unread (rx_queue)."""
    unread = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = (int(address.split(":")[1], 16) for address in fields[1:3])
        if local == port and remote in clients:
            unread[remote] = int(fields[4].split(":")[1], 16)
    return unread.keys() == clients and not any(unread.values())


def test_parallel_wrong_logins_get_at_most_the_limit_of_password_checks(cadre):
    statuses = wrong_logins(cadre, 40)
    assert len(statuses) == 40 and set(statuses) <= {401, 429}
    checked = log_text(cadre).count(CHECKED)  # one log line per password checked and failed
    assert statuses.count(401) == checked <= MAX_ATTEMPTS
    assert statuses.count(429) == 40 - checked


def test_the_owners_browser_logs_in_while_an_attacker_keeps_the_address_throttled(cadre):
    owner = log_in(cadre, "ada", PASSWORD)
    assert owner.last.status_code == 200 and auth.DEVICE_COOKIE in owner.cookies
    owner.post(f"{cadre.url}/logout", headers={"X-CSRF-Token": csrf_token(owner, cadre)},
               timeout=10)  # fmt: skip

    assert 429 in wrong_logins(cadre, MAX_ATTEMPTS + 3)  # same address, same account
    again = log_in(cadre, "ada", PASSWORD)  # a browser that never logged in waits too
    assert again.last.status_code == 429 and "try again in" in again.last.json()["error"]

    token = csrf_token(owner, cadre)
    back = owner.post(f"{cadre.url}/login", json={"login": "ada", "password": PASSWORD},
                      headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip
    assert back.status_code == 200
    assert owner.get(f"{cadre.url}/api/settings", timeout=10).status_code == 200
    assert 429 in wrong_logins(cadre, 2)  # and the attacker is still held


def test_x_forwarded_for_names_the_client_only_behind_a_trusted_proxy(cadre):
    client_a, client_b = {"X-Forwarded-For": "10.9.0.1"}, {"X-Forwarded-For": "10.9.0.2"}
    # No trusted proxy: the header is ignored, so "client B" shares the throttled address.
    assert 429 in wrong_logins(cadre, MAX_ATTEMPTS + 1, login="mallory", **client_a)
    assert log_in(cadre, "ada", PASSWORD, **client_b).last.status_code == 429

    settings = cadre.log_path.parent / "usr" / "settings.json"
    stored = json.loads(settings.read_text())
    settings.write_text(json.dumps({**stored, "trusted_proxies": ["127.0.0.1"]}))
    # Behind the trusted proxy each client has its own count.
    assert 429 in wrong_logins(cadre, MAX_ATTEMPTS + 1, login="eve", **client_a)
    assert log_in(cadre, "ada", PASSWORD, **client_b).last.status_code == 200
    spoofed = {"X-Forwarded-For": "10.9.0.2, 10.9.0.1"}  # the proxy appends the real client
    assert log_in(cadre, "ada", PASSWORD, **spoofed).last.status_code == 429
    assert "from 10.9.0.1" in log_text(cadre)
