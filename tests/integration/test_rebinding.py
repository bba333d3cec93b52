"""DNS rebinding against a real run_ui.py in the default setup (no login, 127.0.0.1): the
one test modules share (tests/support/shared_desktop.py).

A page of rebind.attacker.test whose name now points at 127.0.0.1 reaches Cadre
with `Host: rebind.attacker.test:PORT` and its own `Origin`. Every route and the
Socket.IO connection must refuse it, while loopback names and `allowed_hosts`
keep working.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
import socketio

from tests.support import shared_desktop
from tests.support.live_web import (
    ATTACKER,
    ack,
    as_host,
    close_socket,
    csrf_token,
    log_text,
    open_socket,
)
from tests.support.server_process import ServerProcess

API_KEY = shared_desktop.KEY


@pytest.fixture(scope="module")
def cadre(desktop_server) -> Iterator[ServerProcess]:
    """The run_ui.py test modules share (tests/support/shared_desktop.py), `cadre.lan` an
    allowed host meanwhile."""
    with shared_desktop.for_module(desktop_server, allowed_hosts=["cadre.lan"]) as server:
        yield server


def test_every_route_refuses_a_rebound_host(cadre):
    attacker = as_host(cadre, ATTACKER)
    paths = ["/", "/health", "/login", "/js/app.js", "/css/app.css", "/api/settings", "/api/csrf"]
    for path in paths:
        response = requests.get(cadre.url + path, headers=attacker, timeout=10)
        assert response.status_code == 421, path
        assert "rebind.attacker.test" in response.json()["error"], path
        assert "set-cookie" not in response.headers, path
    api = requests.get(f"{cadre.url}/api/v1/chats", headers={**attacker, "X-API-Key": API_KEY},
                       timeout=10)  # fmt: skip
    assert api.status_code == 421
    # Logged once per name and process: on the shared server, maybe at an earlier
    # module's request for the same name.
    assert "refused a request for host 'rebind.attacker.test" in log_text(cadre)


def test_a_rebound_page_cannot_reveal_the_api_key(cadre):
    attacker = as_host(cadre, ATTACKER)
    http = requests.Session()
    page = http.get(cadre.url + "/", headers=attacker, timeout=10)
    # Even with a token taken from a loopback page, the rebound host is refused.
    token = csrf_token(http, cadre)
    reveal = http.post(f"{cadre.url}/api/settings/api_key/reveal",
                       headers={**attacker, "X-CSRF-Token": token}, timeout=10)  # fmt: skip
    assert page.status_code == 421 and reveal.status_code == 421
    assert API_KEY not in reveal.text and API_KEY not in page.text


def test_a_rebound_page_cannot_open_a_socket(cadre):
    attacker = as_host(cadre, ATTACKER)
    with pytest.raises(socketio.exceptions.ConnectionError):
        open_socket(cadre, attacker)
    # The Origin is checked against the allowed hosts, never against the request's own Host.
    loopback_host = {"Host": f"127.0.0.1:{cadre.port}"}
    for origin in (f"http://{ATTACKER}:{cadre.port}", f"http://127.0.0.1:{cadre.port + 1}",
                   "null", f"http://{ATTACKER}"):  # fmt: skip
        with pytest.raises(socketio.exceptions.ConnectionError):
            open_socket(cadre, {**loopback_host, "Origin": origin})


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]", "127.0.0.2", "cadre.lan"])
def test_loopback_and_allowed_names_work(cadre, name):
    page = as_host(cadre, name)
    http = requests.Session()
    index = http.get(cadre.url + "/", headers=page, timeout=10)
    assert index.status_code == 200 and "<html" in index.text.lower()
    token = csrf_token(http, cadre, **page)
    reveal = http.post(f"{cadre.url}/api/settings/api_key/reveal",
                       headers={**page, "X-CSRF-Token": token}, timeout=10)  # fmt: skip
    assert reveal.json() == {"api_key": API_KEY}
    client = open_socket(cadre, page)
    try:
        chat = ack(client, "chat:new")
        assert chat["ok"] and chat["chat"]["id"]
    finally:
        close_socket(client)


def test_a_name_is_allowed_on_any_port_only_for_loopback_and_allowed_hosts(cadre):
    for host in ("localhost:1", "cadre.lan:8443", "127.0.0.1"):
        assert requests.get(cadre.url + "/health", headers={"Host": host},
                            timeout=10).status_code == 200, host  # fmt: skip
    for host in ("cadre.lan.attacker.test", "localhost.attacker.test", "127.0.0.1.nip.io", ""):
        assert requests.get(cadre.url + "/health", headers={"Host": host},
                            timeout=10).status_code in (400, 421), host  # fmt: skip
