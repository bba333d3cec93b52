"""Cadre starts without the MCP SDK: importing it takes seconds, and most set-ups have no
MCP server. It is imported when there is a server to connect to."""

from __future__ import annotations

import subprocess
import sys

from helpers.files import BASE_DIR


def test_starting_cadre_does_not_import_the_mcp_sdk():
    code = "import sys, run_ui; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    found = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True,
                           text=True, timeout=120, check=True)  # fmt: skip
    assert found.stdout.strip() == "[]"


def test_applying_a_setting_without_servers_does_not_import_it():
    code = (
        "import sys\n"
        "from helpers.runtime import AgentRuntime\n"
        "from mcp_client.supervisor import McpSupervisor\n"
        "runtime = AgentRuntime().start()\n"
        "supervisor = McpSupervisor(runtime)\n"
        "supervisor.apply('')\n"
        "supervisor.apply('{\"mcpServers\": {}}')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))\n"
        "supervisor.stop()\n"
        "runtime.stop()\n"
    )
    found = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True,
                           text=True, timeout=120, check=True)  # fmt: skip
    assert found.stdout.strip() == "[]"
