"""Probes of the web layer against a real run_ui.py: its own usr/, raw HTTP, real sockets.

A probe sends what a browser (or an attacker's page) would: any `Host`, `Origin`
and cookies, over real HTTP to the process. Sockets use python-socketio's client
over long-polling, the transport through which custom headers can be set.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
import socketio

from tests.support.agents import answer, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.server_process import ServerProcess

ATTACKER = "rebind.attacker.test"


def live_server(folder: Path, llm_base_url: str, *, args: tuple[str, ...] = (),
                stored_models: bool = False, **settings: str) -> ServerProcess:  # fmt: skip
    """run_ui.py (with more options `args`) with a fresh usr/ in `folder`, models on the fake
    server, and `settings` as CADRE_<NAME> variables (nothing from the outside environment).

    With `stored_models` the models are in usr/settings.json instead of the environment
    (which would override the file): a test may change them there while the server runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env.pop("PYTEST_CURRENT_TEST", None)
    usr = folder / "usr"
    usr.mkdir(parents=True, exist_ok=True)
    env["CADRE_USR_DIR"] = str(usr)
    models = model_settings(llm_base_url)
    if stored_models:
        stored = usr / "settings.json"
        stored.write_text(json.dumps(models), encoding="utf-8")
        stored.chmod(0o600)  # as Cadre keeps it: it holds keys
    else:
        env.update({f"CADRE_{name.upper()}": value for name, value in models.items()})
    env.update({f"CADRE_{name.upper()}": value for name, value in settings.items()})
    server = ServerProcess(env, folder / "server.log")
    server.args = list(args)
    return server.start()


def model_settings(llm_base_url: str) -> dict[str, str]:
    """The settings of the three models (chat, utility, embeddings) on the fake server."""
    found = {}
    for prefix in ("chat", "util", "embed"):
        found[f"{prefix}_model"] = f"openai/{prefix}-model"
        found[f"{prefix}_api_base"] = llm_base_url
        found[f"{prefix}_api_key"] = "test-key"
    return found


def warm_up(server: ServerProcess, fake: FakeLLMServer) -> None:
    """One message answered through the API, waited for whole (however slow), the chat's
    naming too.

    A shared server's first model call waits for litellm's start-up (seconds on a busy
    machine): paid here, it is not paid inside the first test's wait; and no late request
    of it (the answer, the naming) can take a reply a test scripted. Leaves `fake` emptied.
    """
    key = (
        server.env.get("CADRE_API_KEY")
        or json.loads((server.usr_dir / "settings.json").read_text())["api_key"]
    )
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    fake.reset()
    fake.add_rule(model_is("util-model"), Reply("Warm-up"))
    fake.script(Reply(answer("Warm.")))
    request = urllib.request.Request(
        server.url + "/api/v1/message",
        data=json.dumps({"message": "warm up", "wait": True}).encode(),
        headers=headers,
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        answered = json.loads(response.read())
    assert answered["response"] == "Warm.", answered

    def named() -> bool:
        detail = urllib.request.Request(
            f"{server.url}/api/v1/chats/{answered['context_id']}", headers=headers
        )
        with urllib.request.urlopen(detail, timeout=30) as response:
            return json.loads(response.read())["chat"]["name"] == "Warm-up"

    wait_for(named, timeout=120, what="the warm-up chat's name")
    fake.reset()


@contextmanager
def settings_kept(server: ServerProcess) -> Iterator[None]:
    """The server's settings.json put back after the block as it was before it, in one
    step (the server never reads half a file): a test sharing a server leaves the next
    one the settings it found."""
    settings = server.usr_dir / "settings.json"
    before, mode = settings.read_bytes(), settings.stat().st_mode & 0o777
    try:
        yield
    finally:
        kept = settings.with_name("settings.kept.json")
        kept.write_bytes(before)
        kept.chmod(mode)
        kept.replace(settings)


def put_back_settings(stored: Path, before: bytes, save: Callable[[], None]) -> None:
    """A shared server's settings file as it was before a module changed it: put back in one
    step, then saved once through the page's route so that the server takes it (`save`)."""
    if stored.read_bytes() == before:
        return
    kept = stored.with_name("settings.kept.json")
    kept.write_bytes(before)
    kept.chmod(0o600)
    kept.replace(stored)
    save()


def as_host(server: ServerProcess, name: str) -> dict[str, str]:
    """`Host` and `Origin` of a page loaded from http://<name>:<port>/."""
    return {"Host": f"{name}:{server.port}", "Origin": f"http://{name}:{server.port}"}


def csrf_token(http: requests.Session, server: ServerProcess, **headers: str) -> str:
    response = http.get(f"{server.url}/api/csrf", headers=headers, timeout=10)
    response.raise_for_status()
    return str(response.json()["token"])


class Browser(requests.Session):
    """A browser's cookies, and the answer its login got."""

    last: requests.Response


def log_in(server: ServerProcess, login: str, password: str, **headers: str) -> Browser:
    """A browser (cookies kept) after a login; `.last` is the login's answer."""
    http = Browser()
    token = csrf_token(http, server, **headers)
    http.last = http.post(
        f"{server.url}/login", json={"login": login, "password": password},
        headers={"X-CSRF-Token": token, **headers}, timeout=30,
    )  # fmt: skip
    return http


def cookie_header(http: requests.Session) -> str:
    return "; ".join(f"{c.name}={c.value}" for c in http.cookies)


def open_socket(server: ServerProcess, headers: dict[str, str]) -> socketio.Client:
    """A connected Socket.IO client; raises socketio.exceptions.ConnectionError if refused."""
    client = socketio.Client(reconnection=False)
    client.connect(server.url, headers=headers, transports=["polling"], wait_timeout=10)
    return client


def close_socket(client: socketio.Client) -> None:
    """Close the connection without waiting for the long-poll in flight to come back
    (it may wait for the server's next ping, 25 s)."""
    client.eio.disconnect(abort=True)


def ack(client: socketio.Client, event: str, data: dict[str, Any] | None = None) -> Any:
    return client.call(event, data or {}, timeout=10)


def log_text(server: ServerProcess) -> str:
    return server.log_path.read_text(encoding="utf-8", errors="replace")
