"""What the page asks about the person using it (GET /api/me), and the account routes' answers
the page relies on: which account is the settings' login, whose password only Settings
changes (a change through the users routes was put back at the next request and ended the
session)."""

from __future__ import annotations

import json

import pytest

from server.security import auth

PASSWORD = "correct horse battery"


@pytest.fixture
def locked(usr_dir):
    """A login in the settings: the first admin, "ada"."""
    stored = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}
    (usr_dir / "settings.json").write_text(json.dumps(stored))


def client_of(server):
    client = server.app.test_client()
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


def logged_in(server, name: str, password: str):
    client = client_of(server)
    assert client.post("/login", json={"login": name, "password": password}).status_code == 200
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


def test_in_the_desktop_mode_there_are_no_accounts(server):
    answer = client_of(server).get("/api/me")
    assert answer.status_code == 200
    assert answer.json == {"accounts": False}


def test_me_names_the_person_and_their_role(locked, server):
    assert client_of(server).get("/api/me").status_code == 401  # nobody logged in yet
    ada = logged_in(server, "ada", PASSWORD)
    assert ada.get("/api/me").json == {
        "accounts": True, "name": "ada", "role": "admin", "is_admin": True, "first_admin": True,
        "source": "password",
    }  # fmt: skip
    made = ada.post("/api/users", json={"name": "bea", "password": "bea's password"})
    assert made.status_code == 201, made.json
    bea = logged_in(server, "bea", "bea's password")
    assert bea.get("/api/me").json == {
        "accounts": True, "name": "bea", "role": "member", "is_admin": False,
        "first_admin": False, "source": "password",
    }  # fmt: skip


def test_the_list_says_which_account_is_the_settings_login(locked, server):
    ada = logged_in(server, "ada", PASSWORD)
    ada.post("/api/users", json={"name": "bea", "invite": True})
    users = {u["name"]: u for u in ada.get("/api/users").json["users"]}
    assert users["ada"]["first_admin"] is True and users["ada"]["invited"] is False
    assert users["bea"]["first_admin"] is False and users["bea"]["invited"] is True


def test_the_settings_login_changes_its_password_in_settings_only(locked, server):
    ada = logged_in(server, "ada", PASSWORD)
    answer = ada.patch("/api/users/ada", json={"password": "a new password",
                                               "current_password": PASSWORD})  # fmt: skip
    assert answer.status_code == 400
    assert "Settings" in answer.json["error"]
    # Nothing changed: the session goes on and the password is the one it was.
    assert ada.get("/api/me").status_code == 200
    assert logged_in(server, "ada", PASSWORD).get("/api/me").json["name"] == "ada"


def test_with_the_settings_login_cleared_the_first_admin_keeps_a_password_of_their_own(
    locked, server, usr_dir
):
    ada = logged_in(server, "ada", PASSWORD)
    made = ada.post("/api/users", json={"name": "bea", "password": "bea's password"})
    assert made.status_code == 201
    # The login cleared while others have accounts: ada stays, her password no longer the settings'.
    (usr_dir / "settings.json").write_text(json.dumps({"auth_login": "", "auth_password": ""}))
    assert ada.get("/api/me").json["first_admin"] is False
    changed = ada.patch("/api/users/ada", json={"password": "a new password",
                                                "current_password": PASSWORD})  # fmt: skip
    assert changed.status_code == 200, changed.json
    assert logged_in(server, "ada", "a new password").get("/api/me").json["name"] == "ada"
