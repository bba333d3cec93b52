"""A real Redis server (Debian's `redis-server`) for the cluster tests: on a free port of
127.0.0.1, in a temporary folder of its own, keeping nothing on disk.

It can be stopped and started again on the same port in the middle of a test (the same
address: what nodes connected to it see when Redis goes away and comes back).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.server_process import free_port

if TYPE_CHECKING:
    import redis

#: The program, from Debian's `redis-server` package (`cadre.py test` installs it).
PROGRAM = "redis-server"


def installed() -> bool:
    return shutil.which(PROGRAM) is not None


class RedisServer:
    """One `redis-server` process; `start()` it, `stop()` it, `start()` it again."""

    def __init__(self, folder: Path | None = None) -> None:
        self.port = free_port()
        self.folder = folder or Path(tempfile.mkdtemp(prefix="cadre-redis-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.folder / "redis.log"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Launch it; return once it answers PING."""
        log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the process's life
        self.process = subprocess.Popen(
            [PROGRAM, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             # Nothing to disk: what a test puts in is gone with the process.
             "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited early; see {self.log_path}")
            try:
                if self.ping():
                    return self
            except OSError:
                pass  # not listening yet
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer PING in {timeout} s; see {self.log_path}")

    def stop(self) -> None:
        """End it (SIGTERM: it keeps nothing, so it ends at once); the port is free after."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ping(self, timeout: float = 5.0) -> bool:
        """Whether it answers PING (in Redis's own protocol: no client library needed to
        know it is up)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as connection:
            connection.sendall(b"*1\r\n$4\r\nPING\r\n")
            reply = b""
            while not reply.endswith(b"\r\n"):
                chunk = connection.recv(64)
                if not chunk:
                    break
                reply += chunk
        return reply == b"+PONG\r\n"

    def client(self) -> redis.Redis:
        """A redis-py client of it, for what a test reads or changes there."""
        import redis  # here: the tests that never use Redis do not import it

        return redis.Redis.from_url(self.url, socket_timeout=5, decode_responses=True)

    def close(self) -> None:
        """Stop it and remove its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
