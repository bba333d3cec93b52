"""Sessions end for real against a real run_ui.py: logout and a password change end
them on the server, so a copied cookie and an open socket stop working.

One run_ui.py serves the module; each test logs in afresh, and the settings (the
password) are put back after each test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import requests
import socketio

from server.security import auth
from tests.support.live_web import (
    ack,
    as_host,
    close_socket,
    cookie_header,
    csrf_token,
    live_server,
    log_in,
    open_socket,
    settings_kept,
)
from tests.support.server_process import ServerProcess

PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def shared(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    """One run_ui.py for the module (a server start costs seconds): each test logs in
    with sessions of its own, so another test's sessions are no part of what it sees."""
    folder = tmp_path_factory.mktemp("sessions")
    # The login is stored in settings.json (not the environment), so it can be changed.
    usr = folder / "usr"
    usr.mkdir()
    stored = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}
    (usr / "settings.json").write_text(json.dumps(stored))
    server = live_server(folder, _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def cadre(shared: ServerProcess) -> Iterator[ServerProcess]:
    """The module's server; a password a test changed is put back after it."""
    with settings_kept(shared):
        yield shared


def settings_with(http: requests.Session, cadre) -> requests.Response:
    return http.get(f"{cadre.url}/api/settings", timeout=10)


def log_out(http: requests.Session, cadre) -> None:
    token = csrf_token(http, cadre)
    answer = http.post(f"{cadre.url}/logout", headers={"X-CSRF-Token": token}, timeout=10)
    assert answer.status_code == 200


def socket_of(http: requests.Session, cadre) -> tuple[socketio.Client, threading.Event]:
    """A socket of the browser whose cookies `http` holds, and an event set when it drops."""
    dropped = threading.Event()
    headers = {**as_host(cadre, "127.0.0.1"), "Cookie": cookie_header(http)}
    headers.pop("Host")
    client = socketio.Client(reconnection=False)
    client.on("disconnect", lambda *_: dropped.set())
    client.connect(cadre.url, headers=headers, transports=["polling"], wait_timeout=10)
    return client, dropped


def test_a_cookie_copied_before_logout_is_refused_after_it(cadre):
    browser = log_in(cadre, "ada", PASSWORD)
    copied = cookie_header(browser)
    thief = {"Cookie": copied}
    assert requests.get(f"{cadre.url}/api/settings", headers=thief, timeout=10).status_code == 200
    log_out(browser, cadre)
    assert requests.get(f"{cadre.url}/api/settings", headers=thief, timeout=10).status_code == 401
    assert requests.get(f"{cadre.url}/", headers=thief, allow_redirects=False,
                        timeout=10).status_code == 302  # fmt: skip
    with pytest.raises(socketio.exceptions.ConnectionError):
        open_socket(cadre, {**as_host(cadre, "127.0.0.1"), "Cookie": copied})


def test_logout_ends_an_open_socket(cadre):
    browser = log_in(cadre, "ada", PASSWORD)
    client, dropped = socket_of(browser, cadre)
    assert ack(client, "chats:list")["ok"]
    log_out(browser, cadre)
    assert dropped.wait(10), "the socket of the ended session is still open"


def test_an_open_socket_is_checked_at_every_event(cadre):
    """A password changed by hand in settings.json: no logout ran, the next event is refused."""
    browser = log_in(cadre, "ada", PASSWORD)
    client, _ = socket_of(browser, cadre)
    try:
        assert ack(client, "chats:list")["ok"]
        settings = cadre.log_path.parent / "usr" / "settings.json"
        stored = json.loads(settings.read_text())
        stored["auth_password"] = auth.hash_password("a new one")
        settings.write_text(json.dumps(stored))
        refused = ack(client, "chat:new")
        assert refused["ok"] is False and "log in" in refused["error"]
        assert not ack(client, "chats:list")["ok"]
    finally:
        close_socket(client)
    assert settings_with(browser, cadre).status_code == 401


def test_a_password_change_ends_the_other_sessions(cadre):
    laptop, phone = log_in(cadre, "ada", PASSWORD), log_in(cadre, "ada", PASSWORD)
    phone_socket, dropped = socket_of(phone, cadre)
    token = csrf_token(laptop, cadre)
    change = {"auth_password": "new horse"}
    # The current password goes with it (server/security/reauth.py): a session alone cannot.
    asked = laptop.post(f"{cadre.url}/api/settings", json=change,
                        headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip
    assert asked.status_code == 403 and asked.json()["password_required"] == ["auth_password"]
    confirmed = {"X-CSRF-Token": token, "X-Cadre-Password": quote(PASSWORD)}
    changed = laptop.post(f"{cadre.url}/api/settings", json=change, headers=confirmed, timeout=30)
    assert changed.status_code == 200
    assert settings_with(laptop, cadre).status_code == 200  # the one who changed it stays in
    assert settings_with(phone, cadre).status_code == 401
    assert dropped.wait(10), "the other session's socket is still open"
    assert log_in(cadre, "ada", "new horse").last.status_code == 200


def test_logging_in_again_ends_the_browsers_previous_session(cadre):
    browser = log_in(cadre, "ada", PASSWORD)
    before = {"Cookie": cookie_header(browser)}
    token = csrf_token(browser, cadre)
    again = browser.post(f"{cadre.url}/login", json={"login": "ada", "password": PASSWORD},
                         headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip
    assert again.status_code == 200
    assert settings_with(browser, cadre).status_code == 200
    assert requests.get(f"{cadre.url}/api/settings", headers=before, timeout=10).status_code == 401
