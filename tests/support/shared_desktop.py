"""One run_ui.py in the default setup (no login, 127.0.0.1, an API key) for every test
module of a test process that needs only that and the fake model server: a start and its
first model call cost seconds, and several modules paid them one each.

The server (the `desktop_server` fixture of tests/conftest.py, once per test process)
keeps its API key in its usr/settings.json, read at every request, not in its environment
(which the file could not override), so that a module can turn the key off and on again
(test_mcp_server.py) and save any other setting for its own tests as the Settings page
saves it (`for_module(server, allowed_hosts=[...])`). A module leaves the server as it
found it: the runs it started ended, the settings put back. Its chats stay (in the list of
the next modules, which count the chats they make, never all of them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.agents import wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import csrf_token, live_server, put_back_settings, warm_up
from tests.support.server_process import ServerProcess

#: The API key (X-API-Key, or Bearer) of the shared server.
KEY = "k-desktop-secret-0123456789"


def start(folder: Path, fake: FakeLLMServer) -> ServerProcess:
    """The shared server, its first model call made (litellm's start-up paid once, here)."""
    usr = folder / "usr"
    usr.mkdir(parents=True)
    stored = usr / "settings.json"
    stored.write_text(json.dumps({"api_key": KEY}), encoding="utf-8")
    stored.chmod(0o600)  # as Cadre keeps it: it holds keys
    server = live_server(folder, fake.base_url, llm_retry_delay="0.01")
    warm_up(server, fake)
    return server


@contextmanager
def for_module(server: ServerProcess, **settings: Any) -> Iterator[ServerProcess]:
    """The shared server for one module's tests, with `settings` saved meanwhile as the
    Settings page saves them (put to work at once); afterwards the runs the module left
    are ended and the settings put back (see the module's docstring)."""
    stored = server.usr_dir / "settings.json"
    before = stored.read_bytes()
    try:
        if settings:
            save(server, settings)
        yield server
    finally:
        stop_runs(server)
        put_back_settings(stored, before, lambda: save(server, {}))


def stop_runs(server: ServerProcess, key: str = KEY) -> None:
    """Stop the chats that still run on `server` and wait until none does."""
    for chat_id in running(server, key):
        stopped = requests.post(f"{server.url}/api/v1/chats/{chat_id}/stop",
                                headers={"X-API-Key": key}, timeout=30)  # fmt: skip
        assert stopped.status_code == 200, stopped.text
    wait_for(lambda: not running(server, key), timeout=30, what="the module's runs to stop")


def save(server: ServerProcess, changes: dict[str, Any]) -> None:
    """`changes` to the settings saved through the Settings page's route."""
    http = requests.Session()
    token = csrf_token(http, server)
    saved = http.post(f"{server.url}/api/settings", json=changes,
                      headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip
    assert saved.status_code == 200, saved.text


def running(server: ServerProcess, key: str = KEY) -> list[str]:
    """The ids of the chats that run now."""
    listed = requests.get(f"{server.url}/api/v1/chats", headers={"X-API-Key": key}, timeout=30)
    assert listed.status_code == 200, listed.text
    return [chat["id"] for chat in listed.json()["chats"] if chat["running"]]


# -- fixtures a module imports to take the shared server (the name is what tests ask for) --


@pytest.fixture(scope="module", name="cadre")
def module_cadre(desktop_server: ServerProcess) -> Iterator[ServerProcess]:
    """The shared server for this module (`for_module`), as the tests' `cadre`."""
    with for_module(desktop_server) as server:
        yield server


@pytest.fixture(name="fake")
def naming_fake(_fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    """The process's fake model server, its script cleared, the chat's naming answered."""
    _fake_llm_server.reset()
    _fake_llm_server.add_rule(model_is("util-model"), Reply("A chat"))
    return _fake_llm_server
