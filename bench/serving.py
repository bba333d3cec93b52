"""Serving: gunicorn against Werkzeug's development server, requests per second.

Two real `run_ui.py` processes, each on a copy of the same `usr/` (20 saved chats in the
list): served by gunicorn (the default: one worker process, its threads) and by
Werkzeug (`--dev`), started one after the other and measured once start-up's imports
are done, in rounds that take turns (a machine that gets busier meanwhile weighs on
both); each figure is the median of its rounds. CLIENTS threads of this process send
at once, each on a kept-alive connection of its own, as browsers do:

- `/health`, the smallest answer: what the server itself costs a request;
- a chat page's load as a new visitor's browser makes it (the requests Chromium makes
  for a fresh page, found here from the files themselves): GET `/`, its stylesheets
  and scripts and every module `js/app.js` imports, the two API calls the page makes
  first (`/api/projects`, `/api/setup`), and its Socket.IO connection over WebSocket
  asking for the chat list and the notifications (what the page asks once connected);
- one page load with nothing else running: what a person waits for;
- the server's CPU time per request (both processes under gunicorn): on a shared
  machine it varies less than the rates;
- the step of bench/steps.py through each server (one HTTP request makes 21 model
  calls: the server should not show in it).

The clients share this process's interpreter lock: the rates are what one Python
client process gets, the same for both servers.
"""

from __future__ import annotations

import http.client
import json
import os
import posixpath
import re
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError

from bench.harness import Row
from bench.persistence import make_chat
from bench.steps import STEPS, cpu_seconds, handler_clock, one_message, prepare, server_env
from helpers.files import base_path
from store import persist_chat
from tests.support.fake_llm import FakeLLMServer
from tests.support.server_process import ServerProcess

#: Client threads sending at once.
CLIENTS = 4
#: The servers compared: run_ui.py's arguments for each.
SERVERS = {"gunicorn": (), "Werkzeug": ("--dev",)}
#: A round's figures of one server, by name.
Figures = dict[str, float]
#: What the page asks for first, besides its files (webui/js/app.js, its stores).
API_CALLS = ["/api/projects", "/api/setup"]
_REF = re.compile(r'<(?:link|script)\b[^>]*?\b(?:href|src)="([^"]+)"')
_IMPORT = re.compile(r'\b(?:import|export)\b[^;"\'()]*?["\'](\.{1,2}/[^"\']+\.js)["\']')


def page_files(webui: Path) -> list[str]:
    """The paths a browser fetches for the page: `/`, what index.html names, and every
    module `js/app.js` imports, the imports of those too (static imports only)."""
    found = ["/"] + ["/" + ref for ref in _REF.findall((webui / "index.html").read_text())]
    modules = [path for path in found if path.endswith(".js")]
    while modules:
        module = modules.pop()
        for spec in _IMPORT.findall((webui / module.lstrip("/")).read_text()):
            path = posixpath.normpath(posixpath.join(posixpath.dirname(module), spec))
            if path not in found:
                found.append(path)
                modules.append(path)
    return found


class Visitor:
    """A browser's kept-alive connection (opened again when the server closes it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path: str) -> None:
        for attempt in range(2):
            try:
                self.http.request("GET", path)
                answer = self.http.getresponse()
                answer.read()
            except (http.client.RemoteDisconnected, ConnectionError):
                self.http.close()  # a kept-alive connection the server ended meanwhile
                if attempt:
                    raise
                continue
            if answer.status != 200:
                raise RuntimeError(f"GET {path}: {answer.status}")
            if answer.will_close:
                self.http.close()
            return

    def socket(self) -> None:
        """The page's Socket.IO connection (WebSocket), its two first asks, closed."""
        with PageSocket(self.port) as ws:
            ws.receive("0")  # Engine.IO's open packet
            ws.send("40")  # Socket.IO's connect
            ws.receive("40")
            for number, event in enumerate(["chats:list", "notifications:list"]):
                ws.send(f"42{number}{json.dumps([event, {}])}")  # an event, its ack's number
                ws.receive(f"43{number}")

    def load_page(self, files: list[str]) -> None:
        for path in files + API_CALLS:
            self.get(path)
        self.socket()

    def close(self) -> None:
        self.http.close()


class PageSocket:
    """A WebSocket to Cadre's Socket.IO, spoken with wsproto. (simple-websocket's client
    keeps a frame that came with the handshake's answer unread until the next one: the
    open packet then waits for the server's ping, 25 s.)"""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.texts: deque[str] = deque()
        self.partial = ""
        self.accepted = False
        target = "/socket.io/?EIO=4&transport=websocket"
        self.sock.sendall(self.ws.send(Request(host=f"127.0.0.1:{port}", target=target)))
        while not self.accepted:
            self.read()

    def read(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the socket")
        self.ws.receive_data(data)
        for event in self.ws.events():
            if isinstance(event, AcceptConnection):
                self.accepted = True
            elif isinstance(event, RejectConnection):
                raise ConnectionError(f"WebSocket refused: {event.status_code}")
            elif isinstance(event, TextMessage):
                self.partial += event.data
                if event.message_finished:
                    self.texts.append(self.partial)
                    self.partial = ""
            elif isinstance(event, Ping):
                self.sock.sendall(self.ws.send(event.response()))

    def send(self, text: str) -> None:
        self.sock.sendall(self.ws.send(TextMessage(data=text)))

    def receive(self, prefix: str) -> str:
        """The next packet that starts with `prefix` (Engine.IO pings answered)."""
        while True:
            while self.texts:
                packet = self.texts.popleft()
                if packet == "2":
                    self.send("3")
                elif packet.startswith(prefix):
                    return packet
            self.read()

    def __enter__(self) -> PageSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.sock.sendall(self.ws.send(CloseConnection(code=1000)))
        except (OSError, LocalProtocolError):
            pass  # already closed by the server
        self.sock.close()


def rate(port: int, work: Callable[[Visitor], None], seconds: float) -> float:
    """How many `work`s per second CLIENTS threads get done together."""
    done = [0] * CLIENTS
    start = threading.Barrier(CLIENTS + 1)
    failures: list[BaseException] = []

    def client(n: int) -> None:
        visitor = Visitor(port)
        try:
            start.wait()
            while time.perf_counter() < deadline:
                work(visitor)
                done[n] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
        finally:
            visitor.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    deadline = time.perf_counter() + seconds
    began = time.perf_counter()
    start.wait()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a client failed: {failures[0]!r}") from failures[0]
    return sum(done) / (time.perf_counter() - began)


def server_cpu(server: ServerProcess) -> float:
    return sum(cpu_seconds(pid) for pid in server.pids())


def measure(server: ServerProcess, files: list[str], seconds: float, alone: int) -> Figures:
    """One round of the rates, CPU per request and single page loads against `server`."""
    figures = {}
    cpu = server_cpu(server)
    health = rate(server.port, lambda v: v.get("/health"), seconds)
    figures["health_cpu"] = (server_cpu(server) - cpu) / (health * seconds) * 1000
    figures["health"] = health
    cpu = server_cpu(server)
    pages = rate(server.port, lambda v: v.load_page(files), seconds)
    figures["page_cpu"] = (server_cpu(server) - cpu) / (pages * seconds) * 1000
    figures["pages"] = pages
    times = []
    for _ in range(alone):
        visitor = Visitor(server.port)
        began = time.perf_counter()
        visitor.load_page(files)
        times.append(time.perf_counter() - began)
        visitor.close()
    figures["page_alone"] = statistics.median(times) * 1000
    return figures


def started(name: str, usr: Path, llm: FakeLLMServer) -> tuple[ServerProcess, float]:
    """The server `name` on a copy of `usr`, once it says ready; the seconds from its
    launch until `/health` first answered."""
    own = usr.with_name(f"usr-{name}")
    shutil.copytree(usr, own)
    log_file = Path(tempfile.mkstemp(prefix="cadre-bench-serving-", suffix=".log")[1])
    server = ServerProcess({**server_env(llm), "CADRE_USR_DIR": str(own)}, log_file)
    server.args = list(SERVERS[name])
    began = time.perf_counter()
    server.start(timeout=60)
    answered = time.perf_counter() - began
    wait_ready(server)
    return server, answered


def run(quick: bool) -> list[Row]:
    usr = Path(os.environ["CADRE_USR_DIR"])
    llm = prepare(usr)
    for n in range(20):
        persist_chat.write_chat(make_chat(f"s{n:02d}", 40))
    files = page_files(base_path("webui"))
    servers: dict[str, ServerProcess] = {}
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in SERVERS}
    try:
        for name in SERVERS:  # one after the other: each start alone
            servers[name], answered = started(name, usr, llm)
            samples[name]["start"] = [answered]
            Visitor(servers[name].port).load_page(files)  # warm: every file read once
        # Rounds taking turns, so a machine that gets busier meanwhile weighs on both.
        for _ in range(1 if quick else 3):
            for name, server in servers.items():
                for key, value in measure(server, files, 1.0 if quick else 5.0,
                                          3 if quick else 10).items():  # fmt: skip
                    samples[name].setdefault(key, []).append(value)
        with handler_clock() as spent:
            for server in servers.values():
                one_message(server.url, llm, spent, -1)  # warm
            for n in range(1 if quick else 6):
                for name, server in servers.items():
                    wall, cpu = one_message(server.url, llm, spent, n, server.pids())
                    samples[name].setdefault("step", []).append(wall * 1000)
                    samples[name].setdefault("step_cpu", []).append(cpu * 1000)
    finally:
        for server in servers.values():
            server.stop()
        llm.stop()
    return rows(samples, len(files) + len(API_CALLS))


def rows(samples: dict[str, dict[str, list[float]]], requests: int) -> list[Row]:
    """A row per figure and server, the servers side by side: each the median of its rounds."""
    what = {
        "health": (f"`/health`, {CLIENTS} clients at once (kept-alive connections)", "req/s"),
        "pages": (f"a chat page's load ({requests} requests, then its Socket.IO connection over"
                  f" WebSocket with the 2 asks the page makes), {CLIENTS} clients at once",
                  "loads/s"),
        "page_alone": ("one page load alone, median", "ms"),
        "health_cpu": ("server CPU per `/health` (every process of the server)", "ms"),
        "page_cpu": ("server CPU per page load", "ms"),
        "start": ("`run_ui.py` launched until `/health` answers", "s"),
        "step": (f"step through the HTTP API ({STEPS} echo steps + answer, as bench/steps.py),"
                 " per step, median", "ms"),
        "step_cpu": ("  the same step: server CPU", "ms"),
    }  # fmt: skip
    return [
        Row(f"serving: {words}: {name}", statistics.median(figures[key]), unit)
        for key, (words, unit) in what.items()
        for name, figures in samples.items()
    ]


def wait_ready(server: ServerProcess) -> None:
    """Until `/health` says ready (start-up's imports done: they share the interpreter)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        visitor = Visitor(server.port)
        visitor.http.request("GET", "/health")
        ready = json.loads(visitor.http.getresponse().read())["ready"]
        visitor.close()
        if ready:
            return
        time.sleep(0.05)
    raise RuntimeError("the server did not say ready in 120 s")
