"""A program setting is checked again where the program starts: a settings.json brought
by a restore (or written by hand), an environment variable, a file swapped after saving.
The host never runs a program an agent could have written: the bubblewrap sandbox, the
browser, an MCP server, the local model. Each refusal reaches the person (the chat's
error, the page's status) and the server's log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.agent_types import UserMessage
from helpers.runtime import AgentRuntime
from mcp_client.status import ServerStatus
from mcp_client.supervisor import McpSupervisor
from models.local_model import LocalModels, LocalSpec
from tests.integration.test_program_settings import planted
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply


def restored(usr_dir: Path, **settings: str) -> None:
    """What a restore does to settings.json: the backup's file, as it is."""
    (usr_dir / "settings.json").write_text(json.dumps(settings))


def test_a_command_never_runs_when_the_bubblewrap_program_is_an_agents(
    make_context, llm, usr_dir, caplog
):
    program = planted(usr_dir / "workdir", "bwrap")
    restored(usr_dir, code_exec_bwrap=str(program))
    marker = usr_dir / "workdir" / "unsandboxed"
    llm.script(Reply(reply("code_execution_tool", runtime="terminal", code=f"touch {marker}")),
               Reply(answer("done")))  # fmt: skip
    context = make_context()  # code_exec_sandbox "auto": refused, never "none" instead
    context.communicate(UserMessage("run it")).result(60)
    told = llm.chat_requests()[-1].messages[-1]["content"]
    assert "could have written" in told and "code_exec_bwrap" in told
    assert not (program.parent / "RAN").exists() and not marker.exists()
    assert "code_exec_bwrap" in caplog.text and "could have written" in caplog.text


def test_the_browser_never_starts_a_program_of_the_work_folder(make_context, llm, usr_dir, caplog):
    program = planted(usr_dir / "workdir", "chromium")
    restored(usr_dir, browser_executable=str(program))
    llm.script(Reply(reply("browser:open", url="http://127.0.0.1:9/")), Reply(answer("done")))
    context = make_context()
    context.communicate(UserMessage("browse")).result(60)
    told = llm.chat_requests()[-1].messages[-1]["content"]
    assert "could have written" in told and "browser_executable" in told
    shown = [item for item in context.log.items if "could have written" in item.content]
    assert shown and shown[0].type == "browser"  # the step, in the chat as the page shows it
    assert not (program.parent / "RAN").exists()
    assert "browser_executable" in caplog.text


def test_an_mcp_server_never_starts_from_the_work_folder(usr_dir, tmp_path, caplog):
    """The setting was fine when saved; the agent then swapped the server's script for a
    link to one of its own: refused when (re)started, shown in the server's status."""
    mine = tmp_path / "servers"
    script = planted(mine, "server.sh")
    runtime = AgentRuntime().start()
    supervisor = runtime.provide(McpSupervisor(runtime))
    try:
        (usr_dir / "workdir").mkdir(exist_ok=True)
        swapped = planted(usr_dir / "workdir", "server.sh")
        script.unlink()
        script.symlink_to(swapped)
        supervisor.apply(
            json.dumps({"mcpServers": {"tool": {"command": "/bin/sh", "args": [str(script)]}}})
        )

        def failed() -> ServerStatus | None:
            [status] = supervisor.statuses()
            return status if status.state == "failed" else None

        status = wait_for(failed, 30, "the refusal")
    finally:
        supervisor.stop()
        runtime.stop()
    assert status.error and "could have written" in status.error
    assert status.error.startswith("the MCP server 'tool'")
    assert not (swapped.parent / "RAN").exists() and not (mine / "RAN").exists()
    assert "could have written" in caplog.text


def test_the_local_model_never_loads_a_file_of_the_work_folder(usr_dir, caplog):
    model = planted(usr_dir / "workdir", "model.gguf")
    model.write_bytes(b"GGUF" + b"\0" * 64)
    models = LocalModels()
    models.load(LocalSpec(str(model), 512, 1))
    wait_for(lambda: models.state == "failed", 30, "the refusal")
    assert "could have written" in models.error and "local_model_path" in models.error
    assert "could have written" in caplog.text


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_system_program_still_runs(usr_dir):
    from execution import sandbox_choice
    from helpers.settings import load_settings

    restored(usr_dir, code_exec_bwrap=shutil.which("bwrap") or "bwrap")
    choice = sandbox_choice.choose(load_settings())
    assert "could have written" not in choice.broken
