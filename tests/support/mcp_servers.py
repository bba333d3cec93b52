"""Starting the test MCP servers (tests/support/mcp_server.py) and reading their pids."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers.files import BASE_DIR
from tests.support.server_process import free_port


def stdio_entry(pid_file: Path, **extra: object) -> dict[str, object]:
    """The `mcp_servers` entry of a local test server that writes its pid to `pid_file`."""
    args = ["-m", "tests.support.mcp_server", "stdio", "--pid-file", str(pid_file)]
    return {"command": sys.executable, "args": args, "cwd": str(BASE_DIR), **extra}


def servers_text(**entries: dict[str, object]) -> str:
    return json.dumps({"mcpServers": entries})


class HttpMcpServer:
    """The test server over streamable HTTP (or SSE), in its own process on a free port."""

    def __init__(self, folder: Path, transport: str = "http") -> None:
        self.port = free_port()
        self.pid_file = folder / f"mcp-{transport}-{self.port}.pid"
        self.log = open(folder / f"mcp-{transport}-{self.port}.log", "ab")  # noqa: SIM115
        args = [transport, "--port", str(self.port), "--pid-file", str(self.pid_file)]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.mcp_server", *args],
            cwd=BASE_DIR, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.path = "/mcp" if transport == "http" else "/sse"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def wait_ready(self, timeout: float = 30.0) -> HttpMcpServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the test MCP server exited; see {self.log.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"the test MCP server did not listen in {timeout} s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.log.close()


def read_pid(pid_file: Path) -> int:
    return int(pid_file.read_text())


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, dead but not reaped, counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def kill(pid: int) -> None:
    os.kill(pid, 9)
