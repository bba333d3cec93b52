"""A real `run_ui.py` with MCP servers: start-up does not wait for them, and none outlives it."""

from __future__ import annotations

import json
import sys
import urllib.request

from tests.support.agents import wait_for
from tests.support.mcp_servers import alive, read_pid, servers_text, stdio_entry
from tests.support.server_process import ServerProcess, server_env

#: A local server that never answers: Cadre must come up (and stop) all the same.
SILENT = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"


def statuses(server: ServerProcess) -> dict[str, dict]:
    with urllib.request.urlopen(f"{server.url}/api/mcp/servers", timeout=10) as answer:
        return {s["name"]: s for s in json.loads(answer.read())["servers"]}


def test_servers_start_in_the_background_and_end_with_cadre(tmp_path, usr_dir, monkeypatch):
    local_pid, silent_pid = tmp_path / "local.pid", tmp_path / "silent.pid"
    silent = {"command": sys.executable, "args": ["-c", SILENT, str(silent_pid)]}
    monkeypatch.setenv("CADRE_MCP_SERVERS", servers_text(local=stdio_entry(local_pid),
                                                         silent=silent))  # fmt: skip
    server = ServerProcess(server_env(), tmp_path / "server.log").start(timeout=60)
    try:
        # Serving while one server never gets past its start.
        # (its connection begins once start-up has imported httpx: models/llm.wait_for_sdk)
        wait_for(lambda: "silent" in statuses(server), 60, "the silent server listed")
        assert statuses(server)["silent"]["state"] == "starting"
        wait_for(lambda: statuses(server)["local"]["state"] == "ready", 60, "the local server")
        assert "local.add" in [t["name"] for t in statuses(server)["local"]["tools"]]
        pids = [read_pid(local_pid), wait_for(lambda: silent_pid.exists() and read_pid(silent_pid),
                                              30, "the silent server's pid")]  # fmt: skip
        assert all(alive(pid) for pid in pids)
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert [pid for pid in pids if alive(pid)] == []
