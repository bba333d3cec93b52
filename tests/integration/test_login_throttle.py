"""The login throttle against a real run_ui.py: counted before the password check,
per account and per address, never locking the owner's browser out, proxy-aware."""

from __future__ import annotations

import json
import threading

import pytest
import requests

from server import auth
from server.throttle import MAX_ATTEMPTS
from tests.support.live_web import csrf_token, live_server, log_in, log_text

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
    """`count` wrong logins sent at once, each from a browser of its own."""
    sessions = [requests.Session() for _ in range(count)]
    tokens = [csrf_token(s, cadre) for s in sessions]
    start = threading.Barrier(count)
    statuses: list[int] = []

    def attempt(http: requests.Session, token: str) -> None:
        start.wait()
        answer = http.post(f"{cadre.url}/login", json={"login": login, "password": "guess"},
                           headers={"X-CSRF-Token": token, **headers}, timeout=60)  # fmt: skip
        statuses.append(answer.status_code)

    pairs = zip(sessions, tokens, strict=True)
    threads = [threading.Thread(target=attempt, args=pair) for pair in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    return statuses


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
