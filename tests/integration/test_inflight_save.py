"""A step that is still running is on disk: a SIGKILL loses neither the command nor its output."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator

import pytest

from tests.integration.test_code_execution import code
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply
from tests.support.marked import kill_marked, new_mark
from tests.support.server_process import ServerProcess, call_api, server_env

KEY = "inflight-key"


@pytest.fixture
def mark() -> Iterator[str]:
    value = new_mark()
    yield value
    kill_marked(value)  # after a SIGKILL nothing ends the session's sleep but this


call = functools.partial(call_api, key=KEY)


def test_a_sigkill_during_a_command_keeps_the_command_and_its_first_output(
    llm, usr_dir, tmp_path, monkeypatch, mark
):
    monkeypatch.setenv("CADRE_API_KEY", KEY)
    monkeypatch.setenv("CADRE_CODE_EXEC_BETWEEN_OUTPUT_TIMEOUT", "300")
    monkeypatch.setenv("CADRE_CODE_EXEC_MAX_TIMEOUT", "600")
    # The output comes after the call's own save (a second in), and is computed, so the
    # command's text does not already hold it.
    command = f"sleep 2; echo first-$((40 + 2))-output; ESCAPE_MARK={mark} sleep 300"
    llm.script(Reply(code("terminal", command)), Reply(answer("never reached")))
    server = ServerProcess(server_env(), tmp_path / "server.log").start()
    try:
        chat_id = call(server, "POST", "/api/v1/message", {"message": "go", "wait": False})[
            "context_id"
        ]
        saved = usr_dir / "chats" / chat_id / "chat.json"
        # On disk while the command still sleeps (its call waits up to 300 s for more). The
        # wait is generous: a loaded machine may take long to reach the command at all.
        wait_for(lambda: saved.exists() and "first-42-output" in saved.read_text(),
                 timeout=90, what="the running step's output on disk")  # fmt: skip
        server.kill()  # SIGKILL: no last save
        on_disk = json.loads(saved.read_text())
        step = next(i for i in on_disk["log"]["items"] if i["type"] == "code_exe")
        assert step["kvps"]["code"] == command and "first-42-output" in step["content"]
        call_in_history = on_disk["agents"][0]["history"]["current"]["messages"][-1]["content"]
        assert "sleep 300" in call_in_history  # the model's call, as the next start resumes it
    finally:
        server.stop()
