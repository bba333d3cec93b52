"""A step that is still running is on disk: a SIGKILL loses neither the command nor its output,
nor the part of an answer already written."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator

import pytest

from tests.integration.test_code_execution import code
from tests.support.agents import answer, cut_before, wait_for
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


def test_a_sigkill_while_an_answer_is_written_keeps_what_was_written(
    llm, usr_dir, tmp_path, monkeypatch
):
    """Nothing saved a chat while a model's reply streamed (a step's start and end did, and a
    tool still running after a second): a process killed while Agent 0 wrote a long answer
    lost all of it, and the restart had no cut answer to mark. Here the answer is held
    part-way: what was written must reach disk while it is held."""
    monkeypatch.setenv("CADRE_API_KEY", KEY)
    rest = threading.Event()
    written = cut_before(answer("The first half is written. The second never came."), "The second")
    llm.script(Reply(written, holds={1: rest}))
    # Ready: the model client imported, so the wait below is the save's alone. It ends
    # before the fake gives up holding (30 s), which would let the answer end.
    server = ServerProcess(server_env(), tmp_path / "server.log").start(ready=True)
    try:
        chat_id = call(server, "POST", "/api/v1/message", {"message": "go", "wait": False})[
            "context_id"
        ]
        saved = usr_dir / "chats" / chat_id / "chat.json"
        wait_for(lambda: saved.exists() and "first half" in saved.read_text(),
                 timeout=20, what="the answer written so far on disk")  # fmt: skip
        server.kill()  # SIGKILL while the rest is held: no last save
        on_disk = json.loads(saved.read_text())
        assert on_disk["running"] is True and on_disk["working_agent"] == 0
        [cut] = [i for i in on_disk["log"]["items"] if i["type"] == "response"]
        assert cut["content"] == "The first half is written. "
        rest.set()

        llm.script(Reply(answer("Both halves now.")))
        server.start()
        detail = call(server, "GET", f"/api/v1/chats/{chat_id}")
        assert detail["chat"]["interrupted"] is True
        [cut] = [i for i in detail["log"] if i["type"] == "response"]
        assert cut["kvps"]["status"] == "interrupted"  # marked cut on the page
        done = call(server, "POST", "/api/v1/message", {"message": "go on", "context_id": chat_id})
        assert done == {"context_id": chat_id, "response": "Both halves now."}
        prompt = llm.chat_requests("chat-model")[-1].messages
        assert "go on" in prompt[-1]["content"]
    finally:
        rest.set()
        server.stop()
