"""People of a real run_ui.py with accounts: the admin's API calls, members made through
them (each with a logged-in browser and a key of their own), and a member's page socket.

The pattern of tests/integration/test_accounts.py, shared by the tests of each person's
things kept apart (tasks, notifications, spaces, limits). Their modules share one server
(tests/support/shared_accounts.py): names are numbered in the test process, so no two
modules make the same person."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import requests
import socketio

from tests.support.live_web import Browser, as_host, cookie_header, csrf_token, log_in
from tests.support.server_process import ServerProcess

_names = itertools.count(1)
#: Seconds an answer through the API is waited for.
ANSWER_TIMEOUT = 120


def api(cadre: ServerProcess, method: str, path: str, key: str,
        body: dict[str, Any] | None = None) -> requests.Response:  # fmt: skip
    """`/api/v1<path>` with the API key `key` (it acts as its owner)."""
    return requests.request(method, f"{cadre.url}/api/v1{path}", json=body,
                            headers={"X-API-Key": key}, timeout=30)  # fmt: skip


def ask(cadre: ServerProcess, key: str, message: str, **fields: Any) -> dict[str, Any]:
    """A message through the external API as `key`'s owner, its answer waited for (a
    fake model's answer can be slow to come through a busy machine)."""
    answered = requests.post(f"{cadre.url}/api/v1/message", json={"message": message, **fields},
                             headers={"X-API-Key": key}, timeout=ANSWER_TIMEOUT)  # fmt: skip
    assert answered.status_code == 200, answered.text
    return dict(answered.json())


def page(http: Browser, cadre: ServerProcess, method: str, path: str,
         body: dict[str, Any] | None = None) -> requests.Response:  # fmt: skip
    """A page's request (its login cookie, the CSRF token for a change)."""
    headers = {} if method == "GET" else {"X-CSRF-Token": csrf_token(http, cadre)}
    return http.request(method, f"{cadre.url}{path}", json=body, headers=headers, timeout=30)


class Member:
    """A user the admin made (key `admin_key`): their name, password, own API key and a
    logged-in page."""

    def __init__(self, cadre: ServerProcess, admin_key: str, role: str = "member",
                 name: str = "") -> None:  # fmt: skip
        self.name = name or f"person{next(_names)}"
        self.password = f"{self.name}'s password"
        made = api(cadre, "POST", "/users", admin_key,
                   {"name": self.name, "password": self.password, "role": role})  # fmt: skip
        assert made.status_code == 201, made.text
        self.browser = log_in(cadre, self.name, self.password)
        assert self.browser.last.status_code == 200, self.browser.last.text
        keyed = page(self.browser, cadre, "POST", f"/api/users/{self.name}/keys", {"label": "cli"})
        assert keyed.status_code == 201, keyed.text
        self.key = keyed.json()["key"]
        self.key_id = keyed.json()["id"]


def socket_of(http: requests.Session, cadre: ServerProcess) -> socketio.Client:
    """A page's Socket.IO connection, logged in with `http`'s cookies (long-polling, the
    transport through which the cookie header can be set)."""
    headers = {**as_host(cadre, "127.0.0.1"), "Cookie": cookie_header(http)}
    headers.pop("Host")
    client = socketio.Client(reconnection=False)
    client.connect(cadre.url, headers=headers, transports=["polling"], wait_timeout=10)
    return client


class Heard:
    """Every payload of one event a socket received, kept as it comes."""

    def __init__(self, client: socketio.Client, event: str) -> None:
        self.items: list[dict[str, Any]] = []
        self._arrived = threading.Condition()
        client.on(event, self._add)

    def _add(self, data: dict[str, Any]) -> None:
        with self._arrived:
            self.items.append(data)
            self._arrived.notify_all()

    def wait(self, found: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The payloads once one satisfies `found` (a predicate); AssertionError after
        `timeout` seconds."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: any(found(d) for d in self.items), timeout):
                raise AssertionError(f"not heard within {timeout}s; heard {self.items}")
            return list(self.items)
