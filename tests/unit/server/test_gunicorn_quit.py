"""A stop signal that comes while gunicorn's worker hands a request to its thread pool
stops the worker: the signal handler must not take the pool's lock, which the interrupted
`submit` holds (seen: a worker hung at a test's end until it was killed, 1 run in 8)."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.fresh_python import run_script

pytest.importorskip("gunicorn")

#: The worker's handler called as the signal would call it, inside the pool's `submit`
#: (its lock held by this very thread), in a process of its own: a deadlock hangs it alone.
SCRIPT = """
import json
from concurrent.futures import ThreadPoolExecutor
from server.gunicorn_app import CadreWorker

class Config:
    def worker_int(self, worker):
        pass

worker = CadreWorker.__new__(CadreWorker)
worker.tpool, worker.cfg, worker.alive = ThreadPoolExecutor(2), Config(), True
worker.tpool._shutdown_lock.acquire()  # as inside tpool.submit when the signal came
try:
    worker.handle_quit(15, None)
except SystemExit:
    worker.tpool._shutdown_lock.release()
    print(json.dumps({"stopped": True, "alive": worker.alive}))
"""


def test_a_stop_signal_inside_the_pools_submit_stops_the_worker():
    try:
        seen = run_script(SCRIPT, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the worker's stop handler hung on its thread pool's lock")
    assert seen == {"stopped": True, "alive": False}
