"""A Python process that has imported what `run_ui.py` imports, and litellm, the openai SDK
and tiktoken, and forks a `run_ui.py` from itself on request (tests/support/server_fork.py).

A fresh `python run_ui.py` spends about 1 s of CPU on its imports and 4 s more on start-up's
(litellm's above all): with some ninety servers in a run of the suite on two cores, that was
a third of the suite's CPU. A child of this process starts with them done, then runs
`run_ui.py` as `__main__` with the test's arguments, environment and log, exactly as the
command would (the modules' import-time code has run in here already: nothing of Cadre's
reads the environment then, and the test's environment is set before run_ui.py's code runs).

It is single-threaded when it forks (checked): no lock of another thread is copied held.
It speaks one JSON object a line on stdin/stdout, raw (no buffer is copied into a child):

    {"op": "start", "argv": [...], "env": {...}, "cwd": "...", "log": "..."} -> {"pid": N}
    {"op": "poll", "pid": N}   -> {"code": None | exit code (negative: the signal)}
    {"op": "signal", "pid": N, "signal": S} -> as poll; the signal sent if it still ran
    anything that failed         -> {"error": "..."}

A child is reaped when its exit is asked for: until then its pid is nobody else's.
"""

import json
import os
import sys
import threading
import warnings

BASE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[0] = BASE  # as `python run_ui.py` run in BASE has it
os.chdir(BASE)

# run_ui.py's imports first, as a fresh start makes them (server/socketio_import.py holds
# aiohttp back from python-socketio's import; litellm imports it afterwards).
import run_ui  # noqa: E402, F401

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # as models/llm.py imports it
warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
import httpx  # noqa: E402, F401
import litellm  # noqa: E402, F401
import openai  # noqa: E402, F401
import tiktoken  # noqa: E402

from models import tokens  # noqa: E402

# The tokenizer too, from the files litellm ships, as models/tokens.py reads it (the child's
# own read finds it in tiktoken's cache); the variable is the child's to set again.
os.environ["TIKTOKEN_CACHE_DIR"] = str(tokens._bundled_tokenizer_dir())
tiktoken.get_encoding(tokens.ENCODING)
del os.environ["TIKTOKEN_CACHE_DIR"]

_ended: dict[int, int] = {}


def _reap(pid: int) -> int | None:
    """`pid`'s exit code once it ended (reaped only when its owner asks: until then it
    stays a zombie, so its pid cannot be another child's meanwhile)."""
    if pid not in _ended:
        try:
            reaped, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not a child of this template
            return None
        if reaped == 0:
            return None
        _ended[pid] = os.waitstatus_to_exitcode(status)
    return _ended[pid]


def _lines():
    pending = b""
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line


def _answer(value: object) -> None:
    os.write(1, json.dumps(value).encode() + b"\n")


def _serve() -> dict | None:
    """Answer requests; in a child just forked, return its request."""
    for line in _lines():
        try:
            request = json.loads(line)
            if request["op"] == "poll":
                _answer({"code": _reap(request["pid"])})
            elif request["op"] == "signal":  # here, where no reap can come between
                if _reap(request["pid"]) is None:
                    os.kill(request["pid"], request["signal"])
                _answer({"code": _reap(request["pid"])})
            elif threading.active_count() != 1:  # an import started a thread: forking is unsafe
                _answer({"error": f"threads running: {threading.enumerate()}"})
            else:
                pid = os.fork()
                if pid == 0:
                    return request
                _ended.pop(pid, None)  # a pid used again: the exit kept is an older process's
                _answer({"pid": pid})
        except Exception as exc:  # a request that failed (fork refused...): said, not fatal
            _answer({"error": f"{type(exc).__name__}: {exc}"})
    return None


start = _serve()
if start is None:
    sys.exit(0)  # the test process ended: its pipe closed
log = os.open(start["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
quiet = os.open(os.devnull, os.O_RDONLY)
os.dup2(quiet, 0)
os.dup2(log, 1)
os.dup2(log, 2)
os.close(log)
os.close(quiet)
os.environ.clear()
os.environ.update(start["env"])
import tempfile  # noqa: E402
import time  # noqa: E402

time.tzset()  # what a fresh start reads from the environment once: TZ, the temporary folder
tempfile.tempdir = None
os.chdir(start["cwd"])
sys.argv = list(start["argv"])
import runpy  # noqa: E402

runpy.run_path(os.path.join(BASE, "run_ui.py"), run_name="__main__")
