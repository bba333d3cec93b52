"""run_ui.py served by gunicorn (one worker process of many threads), and by Werkzeug with
`--dev`: real processes, real sockets, real signals.

The gunicorn tests share one server; the last ones stop, kill and start it again
themselves, in the order of this file.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import socket
import time
from collections.abc import Iterator

import aiohttp
import engineio.async_client
import pytest
import requests
import socketio

from tests.support.agents import answer, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import as_host, live_server, log_text
from tests.support.server_process import ServerProcess, call_api, children

API_KEY = "k-production-server-secret-0123456789"
call = functools.partial(call_api, key=API_KEY)


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    server = live_server(tmp_path_factory.mktemp("gunicorn"), _fake_llm_server.base_url,
                         api_key=API_KEY)  # fmt: skip
    yield server
    server.stop()


@pytest.fixture
def named(llm: FakeLLMServer) -> FakeLLMServer:
    llm.add_rule(model_is("util-model"), Reply("A chat"))  # chat names, never a scripted reply
    return llm


async def websocket(server: ServerProcess) -> socketio.AsyncClient:
    """A Socket.IO client connected over WebSocket only, as the page connects."""
    # server/socketio_import.py imports python-socketio with aiohttp held back (Cadre makes
    # no client): its asyncio client, imported then, took aiohttp for missing.
    engineio.async_client.aiohttp = aiohttp  # type: ignore[attr-defined]
    client = socketio.AsyncClient(reconnection=False)
    await client.connect(server.url, transports=["websocket"], wait_timeout=10)
    assert client.transport() == "websocket"
    return client


def new_chat(server: ServerProcess, llm: FakeLLMServer, text: str) -> str:
    """A chat made through the API, answered with `text`: its id."""
    llm.script(Reply(answer(text)))
    done = call(server, "POST", "/api/v1/message", {"message": "hello", "wait": True})
    assert done["response"] == text
    return str(done["context_id"])


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def gone(pid: int) -> bool:
    """Ended (a zombie nobody reaped counts as ended: it holds no socket)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_gunicorn_serves_pages_and_health_from_one_worker(cadre):
    assert "serving with gunicorn" in log_text(cadre)
    assert len(cadre.pids()) == 2  # the arbiter, and its one worker
    health = requests.get(cadre.url + "/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    page = requests.get(cadre.url + "/", timeout=10)
    assert page.status_code == 200 and "<title>Cadre</title>" in page.text
    script = requests.get(cadre.url + "/js/app.js", timeout=10)
    assert script.status_code == 200 and "import" in script.text
    # The Host check holds: a name Cadre does not answer to gets no page.
    rebound = requests.get(cadre.url + "/", headers=as_host(cadre, "rebind.test"), timeout=10)
    assert rebound.status_code == 421


async def test_sigterm_saves_every_chat_at_once_with_a_page_connected(cadre, named):
    """An open WebSocket (a page) does not hold the stop up: gunicorn's graceful stop would
    wait for it past the arbiter's patience, and the worker would be killed unsaved. (First
    of the WebSocket tests: once one has closed, gunicorn 27 counts a connection too few,
    and its graceful stop happens not to wait.)"""
    chat_id = await asyncio.to_thread(new_chat, cadre, named, "Kept over a stop.")
    page = await websocket(cadre)
    assert cadre.process is not None
    await asyncio.to_thread(cadre.stop)  # SIGTERM; SIGKILL after 15 s (returncode -9)
    assert cadre.process.returncode == 0
    assert log_text(cadre).count("INFO cadre: stopped") == 1  # the worker saved, once
    saved = cadre.usr_dir / "chats" / chat_id / "chat.json"
    assert "Kept over a stop." in saved.read_text()
    await page.disconnect()
    await asyncio.to_thread(cadre.start)
    detail = call(cadre, "GET", f"/api/v1/chats/{chat_id}")
    assert any("Kept over a stop." in json.dumps(item) for item in detail["log"])


async def test_a_socketio_client_connects_over_websocket_and_hears_pushed_events(cadre, named):
    client = await websocket(cadre)
    heard: list[dict] = []
    client.on("chats:delta", heard.append)
    try:
        listed = await client.call("chats:list", {}, timeout=10)
        assert listed["ok"] is True
        # A chat made by another client (the API) reaches this one through the pusher.
        chat_id = await asyncio.to_thread(new_chat, cadre, named, "Pushed.")
        for _ in range(100):
            if any(d["kind"] == "added" and d["chat"]["id"] == chat_id for d in heard):
                break
            await asyncio.sleep(0.1)
        assert any(d["kind"] == "added" and d["chat"]["id"] == chat_id for d in heard), heard
    finally:
        await client.disconnect()


def test_no_request_is_logged_and_gunicorns_own_lines_are_masked(cadre):
    for _ in range(3):
        requests.get(cadre.url + "/health", timeout=10)
    # A malformed request line carrying a secret: gunicorn itself logs it.
    with socket.create_connection(("127.0.0.1", cadre.port), timeout=10) as raw:
        raw.sendall(f"GET /?key={API_KEY}\r\n\r\n".encode())
        assert raw.recv(1000).startswith(b"HTTP/1.1 400")
    wait_for(lambda: "Invalid request" in log_text(cadre), what="gunicorn's line about it")
    text = log_text(cadre)
    assert API_KEY not in text
    assert "key=***" in text
    assert "/health" not in text  # no access log


def test_a_body_refused_unread_ends_its_connection_in_words(cadre):
    """A large body Cadre refuses before reading it (413): gunicorn drains at most 64 KB of
    what is left, so it must say `Connection: close`; it said keep-alive and closed, and the
    client's next request on that connection failed (RemoteDisconnected)."""
    browser = requests.Session()  # one kept-alive connection, as a browser's
    refused = browser.post(cadre.url + "/api/v1/message", data=b"x" * (2 * 1024 * 1024),
                           headers={"X-API-Key": API_KEY}, timeout=30)  # fmt: skip
    assert refused.status_code == 413 and "request body over" in refused.json()["error"]
    assert refused.headers["Connection"] == "close"
    assert browser.get(cadre.url + "/health", timeout=10).status_code == 200
    small = browser.post(cadre.url + "/api/v1/message", json={"message": ""},
                         headers={"X-API-Key": API_KEY}, timeout=30)  # fmt: skip
    assert small.status_code == 400 and small.headers["Connection"] == "keep-alive"


def test_x_forwarded_proto_is_cadres_to_believe_not_gunicorns(cadre):
    """Without trusted_proxies, a forwarded scheme from 127.0.0.1 changes nothing (gunicorn
    itself believes 127.0.0.1's by default: the page would ask for HTTPS for a year)."""
    page = requests.get(cadre.url + "/", headers={"X-Forwarded-Proto": "https"}, timeout=10)
    assert page.status_code == 200
    assert "Strict-Transport-Security" not in page.headers


def test_a_crashed_worker_is_started_again_and_reads_the_chats_from_disk(cadre, named):
    chat_id = new_chat(cadre, named, "Still here.")
    arbiter, worker = cadre.pids()
    started = log_text(cadre).count("Cadre is running on")
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: (new := children(arbiter)) and new != [worker], timeout=20,
             what="a new worker")  # fmt: skip
    detail = wait_for(lambda: call(cadre, "GET", f"/api/v1/chats/{chat_id}"), timeout=20,
                      what="the new worker answering")  # fmt: skip
    assert any("Still here." in json.dumps(item) for item in detail["log"])
    assert log_text(cadre).count("Cadre is running on") == started + 1


async def test_sigkill_of_the_arbiter_frees_the_port_at_once(cadre):
    """Killed, the arbiter cannot stop its worker: the worker dies with it (it would
    otherwise hold the port while a page's WebSocket stays open)."""
    page = await websocket(cadre)
    arbiter, worker = cadre.pids()
    began = time.monotonic()
    await asyncio.to_thread(cadre.kill)
    while not (gone(worker) and port_is_free(cadre.port)) and time.monotonic() - began < 5:
        await asyncio.sleep(0.05)
    assert gone(worker) and port_is_free(cadre.port)
    assert time.monotonic() - began < 2
    await page.disconnect()
    await asyncio.to_thread(cadre.start)  # a new Cadre on the same port
    assert arbiter not in cadre.pids()
    assert requests.get(cadre.url + "/health", timeout=10).json()["status"] == "ok"


def test_ctrl_c_saves_once_and_prints_no_traceback(cadre):
    """A terminal's Ctrl-C reaches the arbiter and the worker alike; the arbiter then sends
    the worker SIGQUIT, which arrives while it stops (it raised "Signal 3 ignored due to
    race condition" there)."""
    assert cadre.process is not None
    before = len(log_text(cadre))
    for pid in reversed(cadre.pids()):  # the worker, then the arbiter
        os.kill(pid, signal.SIGINT)
    assert cadre.process.wait(15) == 0
    text = log_text(cadre)[before:]  # what this stop wrote
    assert text.count("INFO cadre: stopped") == 1
    assert "Traceback" not in text and "race condition" not in text, text[-3000:]
    cadre.start()


def test_a_hangup_stops_cadre_and_starts_no_second_worker(cadre):
    """gunicorn reloads on SIGHUP: a second worker beside the first, two Cadres on one usr/."""
    assert cadre.process is not None
    before = len(log_text(cadre))
    cadre.process.send_signal(signal.SIGHUP)
    assert cadre.process.wait(15) == 0
    text = log_text(cadre)[before:]  # what this stop wrote
    assert "Cadre is running on" not in text
    assert text.count("INFO cadre: stopped") == 1


async def test_dev_serves_with_werkzeug_in_one_process(cadre, tmp_path):
    dev = ServerProcess(cadre.env, tmp_path / "dev.log")  # the same usr/
    dev.args = ["--dev"]
    await asyncio.to_thread(dev.start)
    try:
        assert "serving with Werkzeug's development server: --dev was given" in log_text(dev)
        assert dev.pids() == [dev.process.pid]  # type: ignore[union-attr]
        assert requests.get(dev.url + "/health", timeout=10).json()["status"] == "ok"
        client = await websocket(dev)
        assert (await client.call("chats:list", {}, timeout=10))["ok"] is True
        await client.disconnect()
    finally:
        await asyncio.to_thread(dev.stop)
    assert dev.process is not None and dev.process.returncode == 0
    assert "INFO cadre: stopped" in log_text(dev)
