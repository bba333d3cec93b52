"""Login, CSRF, Origin checks and security headers, against the real app."""

from __future__ import annotations

import json
import stat

import pytest

from server.security import auth
from server.security.throttle import MAX_ATTEMPTS


@pytest.fixture
def locked(monkeypatch):
    monkeypatch.setenv("CADRE_AUTH_LOGIN", "ada")
    monkeypatch.setenv("CADRE_AUTH_PASSWORD", "correct horse")


@pytest.fixture
def fresh(server):
    """A client with no CSRF header of its own."""
    return server.app.test_client()


def token_of(client):
    return client.get("/api/csrf").json["token"]


def log_in(client, password="correct horse"):
    token = token_of(client)
    return client.post("/login", json={"login": "ada", "password": password},
                       headers={"X-CSRF-Token": token})  # fmt: skip


def test_without_a_login_the_page_is_open(fresh):
    assert fresh.get("/").status_code == 200
    assert fresh.get("/api/settings").status_code == 200


def test_with_a_login_everything_but_health_and_login_is_closed(locked, fresh, server):
    assert fresh.get("/").headers["Location"].endswith("/login")
    assert fresh.get("/api/settings").status_code == 401
    assert fresh.get("/api/profiles").status_code == 401
    assert fresh.get("/health").status_code == 200
    assert fresh.get("/login").status_code == 200 and fresh.get("/js/login.js").status_code == 200
    assert fresh.get("/js/http.js").status_code == 200  # login.js imports it
    assert fresh.get("/js/app.js").status_code == 401
    socket = server.socketio.test_client(server.app, flask_test_client=fresh)
    assert not socket.is_connected()


def test_the_right_password_opens_the_session(locked, fresh, server):
    assert log_in(fresh).json == {"ok": True}
    assert fresh.get("/api/settings").status_code == 200
    socket = server.socketio.test_client(server.app, flask_test_client=fresh)
    assert socket.is_connected()
    socket.disconnect()
    fresh.post("/logout", headers={"X-CSRF-Token": token_of(fresh)})
    assert fresh.get("/api/settings").status_code == 401


def test_wrong_passwords_are_throttled(locked, fresh):
    for _ in range(MAX_ATTEMPTS):
        assert log_in(fresh, "wrong").status_code == 401
    throttled = log_in(fresh)  # even the right one must wait now
    assert throttled.status_code == 429 and "try again in" in throttled.json["error"]


def test_state_changes_need_the_csrf_token(fresh):
    fresh.get("/health")
    for headers in ({}, {"X-CSRF-Token": "forged"}):
        response = fresh.post("/api/settings", json={"agent_profile": "developer"},
                              headers=headers)  # fmt: skip
        assert response.status_code == 403 and "CSRF" in response.json["error"]
        assert fresh.post("/api/chats/import", json={}, headers=headers).status_code == 403
    token = token_of(fresh)
    ok = fresh.post("/api/settings", json={"agent_profile": "developer"},
                    headers={"X-CSRF-Token": token})  # fmt: skip
    assert ok.status_code == 200


def test_a_foreign_origin_cannot_open_a_socket(server, fresh):
    evil = server.socketio.test_client(server.app, flask_test_client=fresh,
                                       headers={"Origin": "http://evil.example"})  # fmt: skip
    assert not evil.is_connected()
    same = server.socketio.test_client(server.app, flask_test_client=fresh,
                                       headers={"Origin": "http://localhost:5080"})  # fmt: skip
    assert same.is_connected()
    same.disconnect()


def test_a_password_from_the_settings_page_is_stored_hashed(http, usr_dir, monkeypatch):
    response = http.post("/api/settings", json={"auth_login": "bob", "auth_password": "s3cret!"})
    assert response.status_code == 200 and response.json["auth_password"] == "***"
    stored = json.loads((usr_dir / "settings.json").read_text())["auth_password"]
    assert auth.is_hashed(stored) and "s3cret!" not in stored
    assert auth.verify_password("s3cret!", stored) and not auth.verify_password("s3cret", stored)


def test_pages_carry_security_headers(fresh):
    response = fresh.get("/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert response.headers["X-Frame-Options"] == "DENY"
    # The CSRF token is in no cookie a page could read: only the answer of /api/csrf has it.
    assert "Set-Cookie" not in response.headers
    answer = fresh.get("/api/csrf")
    assert answer.headers["Cache-Control"] == "no-store" and len(answer.json["token"]) >= 32
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith("session=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_the_session_key_is_private(server, usr_dir):
    key = usr_dir / "secret_key"
    assert len(key.read_bytes()) == 32 and stat.S_IMODE(key.stat().st_mode) == 0o600


def test_cookies_are_secure_behind_tls(locked, server):
    client = server.app.test_client()
    client.environ_base["wsgi.url_scheme"] = "https"
    token = client.get("/api/csrf", base_url="https://localhost").json["token"]
    credentials = {"login": "ada", "password": "correct horse"}
    response = client.post("/login", json=credentials, headers={"X-CSRF-Token": token},
                           base_url="https://localhost")  # fmt: skip
    cookies = response.headers.getlist("Set-Cookie")
    session_cookie = next(c for c in cookies if c.startswith("session="))
    assert "Secure" in session_cookie and "HttpOnly" in session_cookie
    assert "SameSite=Strict" in session_cookie
    plain = server.app.test_client()
    plain.get("/login")
    assert "Secure" not in plain.get("/login").headers.get("Set-Cookie", "")


def test_the_api_key_is_revealed_on_request_and_can_be_replaced(http, fresh, usr_dir):
    http.post("/api/settings", json={"api_key": "first-key"})
    assert http.get("/api/settings").json["api_key"] == "***"
    assert http.post("/api/settings/api_key/reveal").json == {"api_key": "first-key"}
    fresh.get("/health")
    assert fresh.post("/api/settings/api_key/reveal").status_code == 403  # no CSRF token

    new = http.post("/api/settings/api_key/regenerate").json["api_key"]
    assert len(new) >= 32 and new != "first-key"
    assert json.loads((usr_dir / "settings.json").read_text())["api_key"] == new
    assert http.get("/api/v1/chats", headers={"X-API-Key": "first-key"}).status_code == 401
    assert http.get("/api/v1/chats", headers={"X-API-Key": new}).status_code == 200


def test_an_api_key_from_the_environment_is_not_replaced(http, monkeypatch, usr_dir):
    monkeypatch.setenv("CADRE_API_KEY", "from-env")
    assert http.post("/api/settings/api_key/reveal").json == {"api_key": "from-env"}
    refused = http.post("/api/settings/api_key/regenerate")
    assert refused.status_code == 409 and "CADRE_API_KEY" in refused.json["error"]
    assert not (usr_dir / "settings.json").exists()


def test_revealing_the_key_needs_a_login(locked, fresh):
    token = token_of(fresh)
    assert fresh.post("/api/settings/api_key/reveal",
                      headers={"X-CSRF-Token": token}).status_code == 401  # fmt: skip


def without_ready(health: dict) -> dict:
    return {k: v for k, v in health.items() if k != "ready"}


def test_health_tells_no_counts_without_a_login(locked, fresh):
    assert fresh.get("/health").json.keys() == {"status", "ready"}
    log_in(fresh)
    assert fresh.get("/health").json | {"ready": None} == {
        "status": "ok",
        "chats": 0,
        "ready": None,
    }


def test_health_tells_the_count_when_no_login_is_set(fresh):
    assert fresh.get("/health").json | {"ready": None} == {
        "status": "ok",
        "chats": 0,
        "ready": None,
    }


NESTED_PATHS = ["/api/settings", "/api/chats/import", "/login", "/api/memory/delete"]


@pytest.mark.parametrize("path", [*NESTED_PATHS, "/api/v1/message"])
def test_deeply_nested_json_is_a_clear_400(http, path, monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "k-nested")
    for depth in (100_000, 5_000):
        body = "[" * depth + "]" * depth
        response = http.post(path, data=body, content_type="application/json",
                             headers={"X-API-Key": "k-nested"})  # fmt: skip
        assert response.status_code == 400, (path, depth)
        assert "nested" in response.json["error"], (path, depth)
    assert http.get("/api/settings").status_code == 200
