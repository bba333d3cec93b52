"""One run_ui.py with accounts for every test module of a test process that needs only an
admin (its login, password and key) and the fake model server: a start costs seconds,
and a dozen modules started one each.

The server (the `accounts_server` fixture of tests/conftest.py, once per test process)
keeps its models in its usr/settings.json, not in its environment (whose settings the
Settings page may not change), so that a module can save any other setting for its own
tests as the admin's page saves it (`for_module(server, chat_model=...)`). Each module
makes its own members under names of its own (tests/support/members.py), and leaves the
server as it found it: its users deleted with their data (their runs and MCP servers
stopped, their chats, tasks and folders gone), the admin's chats it started stopped,
the admin's tasks it made deleted, the settings put back. So a module sees only its own
people and things, whichever modules the process ran before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.agents import wait_for
from tests.support.fake_llm import FakeLLMServer
from tests.support.live_web import live_server, log_in, put_back_settings, warm_up
from tests.support.members import api, page
from tests.support.server_process import ServerProcess

#: The first admin (CADRE_AUTH_LOGIN / CADRE_AUTH_PASSWORD) and their key (CADRE_API_KEY).
ADMIN, ADMIN_PASSWORD, ADMIN_KEY = "root", "the admin's password", "the-admins-key"


def start(folder: Path, fake: FakeLLMServer) -> ServerProcess:
    """The shared server, its first model call made (litellm's start-up paid once, here)."""
    server = live_server(folder, fake.base_url, stored_models=True, auth_login=ADMIN,
                         auth_password=ADMIN_PASSWORD, api_key=ADMIN_KEY)  # fmt: skip
    warm_up(server, fake)
    return server


@contextmanager
def for_module(server: ServerProcess, **settings: Any) -> Iterator[ServerProcess]:
    """The shared server for one module's tests, with `settings` saved meanwhile as the
    admin's Settings page saves them (put to work at once: chats, MCP servers);
    afterwards everything the module made is gone (see the module's docstring)."""
    users, chats, tasks = _users(server), _ids(server, "chats"), _ids(server, "tasks")
    stored = server.usr_dir / "settings.json"
    before = stored.read_bytes()
    try:
        if settings:
            _save(server, settings)
        yield server
    finally:
        for name in sorted(_users(server) - users):
            gone = api(server, "DELETE", f"/users/{name}", ADMIN_KEY, {"data": "delete"})
            assert gone.status_code == 200, gone.text
        for chat_id in _ids(server, "chats") - chats:
            api(server, "POST", f"/chats/{chat_id}/stop", ADMIN_KEY)
        wait_for(lambda: not _running(server), timeout=30, what="the admin's runs to stop")
        for task_id in _ids(server, "tasks") - tasks:
            api(server, "DELETE", f"/tasks/{task_id}", ADMIN_KEY)
        put_back_settings(stored, before, lambda: _save(server, {}))


def _save(server: ServerProcess, changes: dict[str, Any]) -> None:
    """`changes` to the settings saved through the Settings page's route, by the admin."""
    admin = log_in(server, ADMIN, ADMIN_PASSWORD)
    assert admin.last.status_code == 200, admin.last.text
    saved = page(admin, server, "POST", "/api/settings", changes)
    assert saved.status_code == 200, saved.text


def _users(server: ServerProcess) -> set[str]:
    listed = api(server, "GET", "/users", ADMIN_KEY)
    assert listed.status_code == 200, listed.text
    return {user["name"] for user in listed.json()["users"]}


def _ids(server: ServerProcess, kind: str) -> set[str]:
    """The ids of the admin's own `chats` or `tasks`."""
    listed = api(server, "GET", f"/{kind}", ADMIN_KEY)
    assert listed.status_code == 200, listed.text
    return {item["id"] for item in listed.json()[kind]}


def _running(server: ServerProcess) -> list[str]:
    chats = api(server, "GET", "/chats", ADMIN_KEY).json()["chats"]
    return [chat["id"] for chat in chats if chat["running"]]
