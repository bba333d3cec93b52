"""`run_ui.py` processes forked from a template that has their imports done
(tests/support/server_template.py: why), one template per test process, started with its
first server.

`fork_run_ui` returns a `Forked`, which a test uses as the `subprocess.Popen` it replaces
(`pid`, `poll`, `wait`, `returncode`, `send_signal`, `terminate`, `kill`): the process is
the template's child, so its exit code is asked of the template. `CADRE_TEST_FRESH_SERVERS=1`
starts every server as a fresh `python run_ui.py` instead (a test of start-up's own imports
asks for one with `ServerProcess(fresh=True)`).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers.files import BASE_DIR
from tests.support import processes

TEMPLATE = Path(__file__).with_name("server_template.py")
#: Set to 1: no template, every server a fresh interpreter.
FRESH = os.environ.get("CADRE_TEST_FRESH_SERVERS", "") == "1"


class _Template:
    """The template process of this test process, and its one conversation at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        #: Which template answers: one started anew knows none of its forerunner's children.
        self.generation = 0

    def ask(self, request: dict, generation: int | None = None) -> dict | None:
        """The template's answer to `request`; with `generation`, only that template's
        (None when it has ended: its children's exits went with it), else one started
        anew if need be."""
        with self._lock:
            process = self._process
            running = process is not None and process.poll() is None
            if generation is not None and (generation != self.generation or not running):
                return None
            if not running:
                process = self._process = self._start()
                self.generation += 1
            assert process is not None
            generation = self.generation
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
            line = process.stdout.readline()
        if not line:
            raise RuntimeError("the run_ui.py template process ended (its error is above)")
        answer = json.loads(line)
        answer["generation"] = generation
        if "error" in answer:
            raise RuntimeError(f"the run_ui.py template refused: {answer['error']}")
        return answer

    def _start(self) -> subprocess.Popen[bytes]:
        # Its environment matters only to imports (nothing of Cadre's reads it then):
        # without any test's settings.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("CADRE_") and k != "PYTEST_CURRENT_TEST"}  # fmt: skip
        return subprocess.Popen(
            [sys.executable, str(TEMPLATE)], cwd=BASE_DIR, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()  # it ends when its requests do
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()


#: The exit code of a process whose template ended before it did: not known.
UNKNOWN_EXIT = -255

_template = _Template()
atexit.register(_template.stop)


class Forked:
    """A process forked by the template, used as a `subprocess.Popen`."""

    def __init__(self, pid: int, argv: list[str], generation: int) -> None:
        self.pid = pid
        self.args = argv
        self.returncode: int | None = None
        self._generation = generation

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._ask({"op": "poll", "pid": self.pid})
        return self.returncode

    def _ask(self, request: dict) -> int | None:
        answer = _template.ask(request, self._generation)
        if answer is not None:
            return answer["code"]
        # Its template ended (the exit code went with it): gone or a zombie is ended.
        state = processes.state(self.pid) or "Z"
        if state != "Z" and request["op"] == "signal":
            try:
                os.kill(self.pid, request["signal"])
            except ProcessLookupError:  # ended meanwhile
                state = "Z"
        return UNKNOWN_EXIT if state == "Z" else None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # sent by the template, where no reap comes between
            self.returncode = self._ask({"op": "signal", "pid": self.pid, "signal": int(sig)})

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_run_ui(argv: list[str], env: dict[str, str], log_path: Path) -> Forked:
    """`python run_ui.py *argv` in BASE_DIR with `env`, its output appended to `log_path`."""
    argv = ["run_ui.py", *argv]
    started = _template.ask(
        {"op": "start", "argv": argv, "env": env, "cwd": str(BASE_DIR), "log": str(log_path)}
    )
    assert started is not None  # asked of whichever template runs
    return Forked(started["pid"], argv, started["generation"])
