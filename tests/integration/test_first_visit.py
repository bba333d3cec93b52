"""A fresh server reached from other machines asks for its admin on the first visit: until
then every page leads to /welcome and everything else is refused; the setup code, which
only the log (and usr/welcome_code) shows, proves it is the person who started Cadre."""

from __future__ import annotations

import re

import requests

from tests.support.live_web import Browser, csrf_token, live_server, log_in
from tests.support.server_process import ServerProcess


def served_to_others(tmp_path, base_url: str) -> ServerProcess:
    """run_ui.py on every address (`--host 0.0.0.0`), no account, no login set."""
    return live_server(tmp_path, base_url, args=("--host", "0.0.0.0"), api_key="a-key")


def test_the_first_visit_makes_the_admin_with_the_setup_code(tmp_path, _fake_llm_server):
    server = served_to_others(tmp_path, _fake_llm_server.base_url)
    try:
        logged = server.log_path.read_text()
        found = re.search(r"open http://0\.0\.0\.0:\d+/welcome and enter the setup code (\S+)",
                          logged)  # fmt: skip
        assert found, logged[-2000:]
        code = found.group(1)
        assert (server.usr_dir / "welcome_code").read_text() == code
        assert (server.usr_dir / "welcome_code").stat().st_mode & 0o777 == 0o600
        http = Browser()
        # Everything leads to the welcome page; the API and the app's routes are shut.
        home = http.get(f"{server.url}/", allow_redirects=False, timeout=10)
        assert home.status_code == 302 and home.headers["Location"].endswith("/welcome")
        assert http.get(f"{server.url}/welcome", timeout=10).status_code == 200
        shut = http.get(f"{server.url}/api/chats/search?q=x", timeout=10)
        assert shut.status_code == 401 and "/welcome" in shut.json()["error"]
        keyed = requests.get(f"{server.url}/api/v1/chats", headers={"X-API-Key": "a-key"},
                             timeout=10)  # fmt: skip
        assert keyed.status_code == 401
        token = csrf_token(http, server)
        wrong = http.post(f"{server.url}/api/welcome", headers={"X-CSRF-Token": token},
                          json={"code": "not-the-code", "name": "ada",
                                "password": "a long password"}, timeout=10)  # fmt: skip
        assert wrong.status_code == 403 and "setup code" in wrong.json()["error"]
        made = http.post(f"{server.url}/api/welcome", headers={"X-CSRF-Token": token},
                         json={"code": code, "name": "Ada", "password": "a long password"},
                         timeout=30)  # fmt: skip
        assert made.status_code == 200, made.text
        assert not (server.usr_dir / "welcome_code").exists()
        # Logged in as the admin at once; the welcome is over; the login works.
        assert http.get(f"{server.url}/api/settings", timeout=10).status_code == 200
        fresh = csrf_token(http, server)  # the login's session has a token of its own
        again = http.post(f"{server.url}/api/welcome", headers={"X-CSRF-Token": fresh},
                          json={"code": code, "name": "eve", "password": "another one!"},
                          timeout=10)  # fmt: skip
        assert again.status_code == 409
        assert log_in(server, "ada", "a long password").last.status_code == 200
        assert Browser().get(f"{server.url}/api/settings", timeout=10).status_code == 401
    finally:
        server.stop()
