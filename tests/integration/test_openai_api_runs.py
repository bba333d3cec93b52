"""The OpenAI-compatible endpoint when a run gives no answer: too slow (504) or stopped.

In process (the app over the fake model server), so the wait limit can be made short."""

from __future__ import annotations

import json
import threading

import pytest

from server.apis import agent_calls
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is

AUTH = {"Authorization": "Bearer run-key"}
BODY = {"model": "cadre", "messages": [{"role": "user", "content": "Take your time."}]}


@pytest.fixture(autouse=True)
def _key(monkeypatch, llm):
    monkeypatch.setenv("CADRE_API_KEY", "run-key")
    llm.add_rule(model_is("util-model"), Reply("Named"))


def only_chat(server):
    return wait_for(lambda: next(iter(server.app.extensions["cadre.chats"].registry.all()), None),
                    what="the endpoint's chat")  # fmt: skip


def events(raw: bytes) -> list[str]:
    return [line.removeprefix("data: ") for line in raw.decode().split("\n\n") if line]


def test_no_answer_in_time_is_a_504_and_the_chat_goes_on(http, server, llm, monkeypatch):
    monkeypatch.setattr(agent_calls, "WAIT_LIMIT", 0.5)
    gate = threading.Event()
    llm.script(Reply(answer("Late."), gate=gate))
    try:
        response = http.post("/v1/chat/completions", json=BODY, headers=AUTH)
    finally:
        gate.set()
    assert response.status_code == 504
    error = response.json["error"]
    assert error["code"] == "timeout" and "goes on" in error["message"]
    chat = only_chat(server)
    wait_for(lambda: not chat.running, what="the late answer")
    assert [i.content for i in chat.log.items if i.type == "response"] == ["Late."]


@pytest.mark.parametrize("stream", [False, True])
def test_a_stopped_run_is_a_clear_error(http, server, llm, stream):
    gate = threading.Event()
    llm.script(Reply(answer("Never."), gate=gate))
    got = {}

    def ask() -> None:
        got["response"] = http.post("/v1/chat/completions", json={**BODY, "stream": stream},
                                    headers=AUTH)  # fmt: skip
        got["body"] = got["response"].get_data()

    asking = threading.Thread(target=ask)
    asking.start()
    chat = only_chat(server)
    wait_for(lambda: chat.running, what="the run")
    chat.stop()
    gate.set()
    asking.join(60)
    if stream:
        assert got["response"].status_code == 200
        *_, error, done = events(got["body"])
        assert json.loads(error)["error"]["code"] == "run_stopped" and done == "[DONE]"
    else:
        assert got["response"].status_code == 409
        assert (
            json.loads(got["body"])["error"]["message"] == "the run was stopped before it answered"
        )
