"""Single sign-on's settings, through the real Flask app: what the login page is told, a
provider that is not set, down, or not the issuer it was set as (each a page in plain
words and a line in the log), and who may change who single sign-on lets in."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from server.security import auth
from tests.support.oidc_provider import CLIENT_ID, OidcProvider

PASSWORD = "the admin's password"
LOGIN = {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}


def settings(usr_dir, **fields: object) -> None:
    (usr_dir / "settings.json").write_text(json.dumps(fields))


def closed_port() -> int:
    """A loopback port nobody listens on (taken, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def provider() -> Iterator[OidcProvider]:
    started = OidcProvider().start()
    yield started
    started.stop()


def test_without_a_provider_the_login_page_offers_none_and_the_route_says_so(http, usr_dir):
    settings(usr_dir, **LOGIN)
    assert http.get("/api/login/methods").json == {"oidc": None}
    answer = http.get("/login/oidc", headers={"Accept": "text/html"})
    assert answer.status_code == 404
    assert "single sign-on is not set up here" in answer.text
    assert answer.mimetype == "text/html" and "<script" not in answer.text


def test_the_button_says_single_sign_on_when_the_provider_has_no_name(http, usr_dir):
    settings(usr_dir, **LOGIN, oidc_issuer="https://id.example.org/", oidc_client_id="c")
    assert http.get("/api/login/methods").json == {
        "oidc": {"name": "single sign-on", "url": "/login/oidc"}}  # fmt: skip


def test_without_accounts_single_sign_on_asks_for_a_first_admin(http, usr_dir):
    settings(usr_dir, oidc_issuer="https://id.example.org", oidc_client_id="c")
    answer = http.get("/login/oidc", headers={"Accept": "application/json"})
    assert answer.status_code == 409 and "first admin" in answer.json["error"]


def test_a_provider_that_is_down_is_a_page_in_plain_words_and_a_log_line(http, usr_dir, caplog):
    issuer = f"http://127.0.0.1:{closed_port()}"
    settings(usr_dir, **LOGIN, oidc_issuer=issuer, oidc_client_id=CLIENT_ID)
    answer = http.get("/login/oidc", headers={"Accept": "text/html"})
    assert answer.status_code == 502
    assert f"could not reach the sign-in provider at {issuer}" in answer.text
    assert "try again later" in answer.text and "Traceback" not in answer.text
    assert "single sign-on: failed" in caplog.text and "ConnectionError" in caplog.text


def test_a_discovery_document_of_another_issuer_is_refused(http, usr_dir, provider, caplog):
    # The provider calls itself http://localhost:<port>; set as 127.0.0.1, it is not that.
    issuer = provider.issuer.replace("localhost", "127.0.0.1")
    settings(usr_dir, **LOGIN, oidc_issuer=issuer, oidc_client_id=CLIENT_ID)
    answer = http.get("/login/oidc", headers={"Accept": "application/json"})
    assert answer.status_code == 502
    assert f"calls itself {provider.issuer!r}" in answer.json["error"]
    assert "/authorize" not in provider.asked


def test_who_single_sign_on_lets_in_needs_the_password_to_change(server, usr_dir):
    settings(usr_dir, **LOGIN)
    page = server.app.test_client()
    page.environ_base["HTTP_X_CSRF_TOKEN"] = page.get("/api/csrf").json["token"]
    assert page.post("/login", json={"login": "ada", "password": PASSWORD}).status_code == 200
    page.environ_base["HTTP_X_CSRF_TOKEN"] = page.get("/api/csrf").json["token"]
    for change in ({"oidc_issuer": "https://id.elsewhere.example"},
                   {"oidc_admin_value": "everyone"}, {"sso_header_login": True},
                   {"trusted_proxies": ["203.0.113.9"]}):  # fmt: skip
        asked = page.post("/api/settings", json=change)
        assert asked.status_code == 403, change
        assert asked.json["password_required"] == list(change), change
    saved = page.post("/api/settings", json={"oidc_provider_name": "Example ID"})
    assert saved.status_code == 200  # what the button says needs no password
    confirmed = page.post("/api/settings", json={"oidc_issuer": "https://id.example.org/"},
                          headers={"X-Cadre-Password": quote(PASSWORD)})  # fmt: skip
    assert confirmed.status_code == 200 and confirmed.json["oidc_issuer"] == (
        "https://id.example.org")  # fmt: skip
    refused = page.post("/api/settings", json={"oidc_issuer": "id.example.org"},
                        headers={"X-Cadre-Password": quote(PASSWORD)})  # fmt: skip
    assert refused.status_code == 400 and "not an issuer address" in refused.json["error"]
