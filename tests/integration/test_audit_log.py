"""The audit log: who logged in or failed to, and who changed settings or the API key, with
time and address, in an append-only file the account can read (GET /api/audit)."""

from __future__ import annotations

import json

import pytest

from server.security import auth

PASSWORD = "correct horse battery"


@pytest.fixture
def locked(usr_dir):
    stored = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}
    (usr_dir / "settings.json").write_text(json.dumps(stored))


def client_of(server, remote: str = "192.0.2.10"):
    client = server.app.test_client()
    client.environ_base["REMOTE_ADDR"] = remote
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


def log_in(client, password: str):
    return client.post("/login", json={"login": "ada", "password": password})


def test_logins_failures_and_changes_are_on_record_with_actor_and_address(locked, server, usr_dir):
    stranger = client_of(server, "198.51.100.7")
    assert log_in(stranger, "wrong").status_code == 401
    owner = client_of(server)
    assert log_in(owner, PASSWORD).status_code == 200
    owner.environ_base["HTTP_X_CSRF_TOKEN"] = owner.get("/api/csrf").json["token"]
    assert owner.post("/api/settings", json={"memory_recall_tokens": 100}).status_code == 200
    assert owner.post("/api/settings/api_key/regenerate").status_code == 200
    assert owner.post("/logout").status_code == 200

    owner = client_of(server)
    log_in(owner, PASSWORD)
    shown = owner.get("/api/audit").json["entries"]
    kinds = [(e["event"], e["actor"], e["address"]) for e in reversed(shown)]
    assert kinds[:5] == [
        ("login_failed", "ada", "198.51.100.7"),
        ("login", "ada", "192.0.2.10"),
        ("settings_changed", "ada", "192.0.2.10"),
        ("api_key_changed", "ada", "192.0.2.10"),
        ("logout", "ada", "192.0.2.10"),
    ]
    changed = next(e for e in shown if e["event"] == "settings_changed")
    assert changed["details"] == {"fields": ["memory_recall_tokens"]}
    text = (usr_dir / "audit.log").read_text()
    assert PASSWORD not in text and "wrong" not in text  # no password, tried or true
    assert (usr_dir / "audit.log").stat().st_mode & 0o077 == 0


def test_the_audit_log_is_for_a_logged_in_account_only(locked, server):
    assert client_of(server).get("/api/audit").status_code == 401


def test_a_wrong_password_for_a_risky_change_is_on_record(locked, server):
    from server.security.reauth import PASSWORD_HEADER

    owner = client_of(server)
    log_in(owner, PASSWORD)
    owner.environ_base["HTTP_X_CSRF_TOKEN"] = owner.get("/api/csrf").json["token"]
    refused = owner.post("/api/settings", json={"code_exec_sandbox": "none"},
                         headers={PASSWORD_HEADER: "guess"})  # fmt: skip
    assert refused.status_code == 403
    [entry] = [e for e in owner.get("/api/audit").json["entries"] if e["event"] != "login"]
    assert (entry["event"], entry["details"]) == (
        "password_failed",
        {"fields": ["code_exec_sandbox"]},
    )
