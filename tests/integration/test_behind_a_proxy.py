"""Cadre behind a reverse proxy that speaks HTTPS to the browser (README, "Behind a reverse
proxy"): what the proxy says of the browser's connection is believed only from a proxy of
`trusted_proxies`; then the session cookie is Secure and the browser is told to keep to
HTTPS (HSTS)."""

from __future__ import annotations

import json

import pytest

PROXY, STRANGER = "10.0.0.5", "203.0.113.7"


@pytest.fixture
def behind_proxy(usr_dir):
    (usr_dir / "settings.json").write_text(json.dumps({"trusted_proxies": [f"{PROXY}/32"]}))


def csrf_from(server, remote: str, proto: str | None):
    client = server.app.test_client()
    headers = {"X-Forwarded-Proto": proto} if proto else {}
    return client.get("/api/csrf", headers=headers, environ_base={"REMOTE_ADDR": remote})


def test_https_through_a_trusted_proxy_makes_the_session_cookie_secure(behind_proxy, server):
    answered = csrf_from(server, PROXY, "https")
    assert answered.status_code == 200
    assert "Secure" in answered.headers["Set-Cookie"]
    assert answered.headers["Strict-Transport-Security"].startswith("max-age=")


def test_what_a_stranger_or_plain_http_says_of_https_is_not_believed(behind_proxy, server):
    for remote, proto in ((STRANGER, "https"), (PROXY, "http"), (PROXY, None)):
        answered = csrf_from(server, remote, proto)
        assert answered.status_code == 200
        assert "Secure" not in answered.headers["Set-Cookie"], (remote, proto)
        assert "Strict-Transport-Security" not in answered.headers, (remote, proto)


def test_the_nearest_proxys_word_counts_when_several_forwarded(behind_proxy, server):
    # A client may send its own X-Forwarded-Proto; the trusted proxy appends what it saw.
    assert "Secure" not in csrf_from(server, PROXY, "https, http").headers["Set-Cookie"]
    assert "Secure" in csrf_from(server, PROXY, "http, https").headers["Set-Cookie"]
