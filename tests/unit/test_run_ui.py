"""The entry point starts without importing what it does not use."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.files import BASE_DIR
from tests.support.fresh_python import run_script


def test_start_up_imports_no_http_client_it_does_not_use():
    """python-socketio imports its clients' stack (aiohttp, a fifth of the start-up) for
    clients Cadre never makes: held back (server/socketio_import.py), and importable after,
    as litellm does. httpx waits for the setup dialog's model list."""
    code = (
        "import sys, run_ui\n"
        "print(*(m in sys.modules for m in ('aiohttp', 'httpx', 'litellm', 'openai')))\n"
        "import aiohttp, socketio\n"
        "print(aiohttp.ClientSession is not None, socketio.AsyncClient is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"] * 4 + ["True"] * 2


#: Starts Cadre as run_ui.py does (its chats, app, pusher, scheduler and node), alone, then
#: as a node of a cluster (no Redis needed: nothing connects before it serves).
START_ALONE_THEN_IN_A_CLUSTER = """
import json, os, sys
import run_ui
from cluster.config import cluster_config
from cluster.node import node_for
from helpers.runtime import AgentRuntime
from server.app import create_app

runtime = AgentRuntime().start()
chats, server = run_ui.start(runtime, "127.0.0.1", 5999)
alone = {"redis": "redis" in sys.modules, "health": server.node.health(),
         "queue": server.socketio.server.manager.__class__.__name__}
server.scheduler.stop(); server.pusher.stop(); server.node.stop()
os.environ["CADRE_REDIS_URL"] = "redis://127.0.0.1:1/0"
node = node_for(cluster_config(), "127.0.0.1:5998")
clustered = create_app(chats, "127.0.0.1", 5998, node)
runtime.stop()
queue = clustered.socketio.server.manager.__class__.__name__
print(json.dumps({"alone": alone, "cluster": {"redis": "redis" in sys.modules, "queue": queue}}))
"""


def test_a_process_alone_imports_no_redis(tmp_path):
    """Cluster mode costs nothing when it is off: python-socketio's Redis managers import
    redis-py whenever it is installed, held back as aiohttp is (server/socketio_import.py);
    a node of a cluster gets it, and Flask-SocketIO's Redis manager with it."""
    started = run_script(START_ALONE_THEN_IN_A_CLUSTER, CADRE_USR_DIR=str(tmp_path))
    assert started["alone"] == {"redis": False, "health": {}, "queue": "Manager"}
    assert started["cluster"] == {"redis": True, "queue": "RedisManager"}


def test_a_wrong_cluster_setting_ends_the_start_in_words(tmp_path):
    """Before anything starts or is written: the setting named, what to write instead, no
    traceback, and never Redis's password."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env.update(CADRE_USR_DIR=str(tmp_path / "own"), CADRE_REDIS_URL="http://:s3cret-pw@cache:1")
    done = subprocess.run([sys.executable, "run_ui.py", "--port", "1"], cwd=BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert "CADRE_REDIS_URL ('cache:1') is no Redis address: write redis://" in done.stderr
    assert "Traceback" not in done.stderr and "s3cret-pw" not in done.stderr
    assert not (tmp_path / "own").exists()
