"""People on a real run_ui.py with accounts: the first admin's key, members made through the
users API, each with a logged-in page and a key of their own (issue 35's tests)."""

from __future__ import annotations

import itertools
from typing import Any

import requests

from tests.support.live_web import Browser, csrf_token, log_in
from tests.support.server_process import ServerProcess

#: The first admin (CADRE_AUTH_LOGIN / CADRE_AUTH_PASSWORD) and their key (CADRE_API_KEY).
ADMIN, ADMIN_PASSWORD, ADMIN_KEY = "root", "the admin's password", "the-admins-key"
#: Model calls answered by the fake server can be slow on a busy machine.
TIMEOUT = 120
_names = itertools.count(1)


def api(cadre: ServerProcess, method: str, path: str, key: str = ADMIN_KEY,
        body: dict[str, Any] | None = None) -> requests.Response:  # fmt: skip
    """A call of the external API (`/api/v1<path>`) with `key`."""
    return requests.request(method, f"{cadre.url}/api/v1{path}", json=body,
                            headers={"X-API-Key": key}, timeout=TIMEOUT)  # fmt: skip


def page(http: requests.Session, cadre: ServerProcess, method: str, route: str,
         body: dict[str, Any] | None = None, **params: str) -> requests.Response:  # fmt: skip
    """A call of the page's `route` from a logged-in browser (the CSRF token for a change),
    with `params` as its query string."""
    headers = {} if method == "GET" else {"X-CSRF-Token": csrf_token(http, cadre)}
    return http.request(method, f"{cadre.url}{route}", json=body, params=params or None,
                        headers=headers, timeout=TIMEOUT)  # fmt: skip


class Member:
    """A user the admin made: their name, password, own API key and a logged-in page."""

    def __init__(self, cadre: ServerProcess, prefix: str = "member", role: str = "member"):
        self.name = f"{prefix}{next(_names)}"
        self.password = f"{self.name}'s password"
        made = api(cadre, "POST", "/users",
                   body={"name": self.name, "password": self.password, "role": role})  # fmt: skip
        assert made.status_code == 201, made.text
        self.browser: Browser = log_in(cadre, self.name, self.password)
        assert self.browser.last.status_code == 200, self.browser.last.text
        keyed = page(self.browser, cadre, "POST", f"/api/users/{self.name}/keys", {"label": "cli"})
        assert keyed.status_code == 201, keyed.text
        self.key: str = keyed.json()["key"]


def ask(cadre: ServerProcess, key: str, message: str, **fields: Any) -> dict[str, Any]:
    """A message through the external API, waited for: its answer (`response`, `context_id`)."""
    answered = api(cadre, "POST", "/message", key, {"message": message, **fields})
    assert answered.status_code == 200, answered.text
    return dict(answered.json())
