"""A real `run_ui.py` in its own process, on a free port, for end-to-end tests."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers.files import BASE_DIR
from tests.support import server_fork

#: Ports handed to servers a test starts later: below Linux's ephemeral range (32768 on),
#: where no client socket takes one meanwhile, a slice per test process (pytest-xdist's
#: `gw<N>`), so two processes never pick the same port between the probe and the start.
PORTS = range(20_000, 32_000)
SLICE = 1_500


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    start = PORTS.start + (int(worker) if worker.isdigit() else 0) * SLICE % len(PORTS)
    for _ in range(200):
        port = random.randrange(start, start + SLICE)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: try another
            return port
    raise RuntimeError(f"no free port in {start}-{start + SLICE}")


class ServerProcess:
    """`python run_ui.py` with the test's environment (usr folder, fake model server)."""

    def __init__(self, env: dict[str, str], log_path: Path, *, fresh: bool = False) -> None:
        self.env = env
        self.log_path = log_path
        self.port = free_port()
        #: A fresh interpreter (a test of start-up's own imports) instead of a fork of the
        #: template that has them done (tests/support/server_fork.py).
        self.fresh = fresh or server_fork.FRESH
        self.process: subprocess.Popen[bytes] | server_fork.Forked | None = None
        #: More of run_ui.py's options (`--host 0.0.0.0`, `--dev`).
        self.args: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def usr_dir(self) -> Path:
        """The server's own `usr/` folder (its settings.json, chats, ...)."""
        return Path(self.env["CADRE_USR_DIR"])

    def start(self, timeout: float = 30.0, ready: bool = False) -> ServerProcess:
        """Launch it; return once `/health` answers and, with `ready`, says so (the model
        clients imported: seconds more, which a test's own short waits should not pay)."""
        argv = ["--port", str(self.port), *self.args]
        if self.fresh:
            with open(self.log_path, "ab") as log:  # the child holds its own copy
                self.process = subprocess.Popen(
                    [sys.executable, "run_ui.py", *argv],
                    cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
        else:
            self.process = server_fork.fork_run_ui(argv, self.env, self.log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"run_ui.py exited early; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1) as answer:
                    if answer.status == 200 and (json.loads(answer.read())["ready"] or not ready):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"run_ui.py did not answer /health in {timeout} s; see {self.log_path}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def pids(self) -> list[int]:
        """The server's processes: run_ui.py's, and gunicorn's worker (its child) if any."""
        assert self.process is not None
        return [self.process.pid, *children(self.process.pid)]

    def restart(self) -> ServerProcess:
        self.stop()
        return self.start()


def children(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue  # not a process, or ended meanwhile
        if int(parent) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def server_env() -> dict[str, str]:
    """This process's environment (the tests set CADRE_* in it), for the child."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def call_api(
    server: ServerProcess, method: str, path: str, body: dict | None = None, *, key: str
) -> dict:
    """One request to the server's external API with `key`; the answer's JSON."""
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"X-API-Key": key, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())
