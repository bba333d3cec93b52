"""The external API: key checks, messages, chats, stop, bad input."""

from __future__ import annotations

import json
import threading
import time

import pytest

from store import persist_chat
from store.chats import ChatManager
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

KEY = {"X-API-Key": "api-secret"}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")


def chats_of(server) -> ChatManager:
    return server.app.extensions["cadre.chats"]


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "wrong"}, {"X-API-Key": ""}])
def test_a_missing_or_wrong_key_is_refused(http, server, headers):
    response = http.post("/api/v1/message", json={"message": "hi"}, headers=headers)
    assert response.status_code == 401 and response.json == {"error": "missing or wrong X-API-Key"}
    assert http.get("/api/v1/chats", headers=headers).status_code == 401
    assert len(chats_of(server).registry) == 0


def test_the_key_may_come_as_a_bearer_token_as_on_v1_and_mcp(http):
    bearer = http.get("/api/v1/chats", headers={"Authorization": "Bearer api-secret"})
    assert bearer.status_code == 200
    wrong = http.get("/api/v1/chats", headers={"Authorization": "Bearer wrong"})
    assert wrong.status_code == 401


def test_an_empty_key_setting_disables_the_api(http, monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "")
    response = http.get("/api/v1/chats", headers={"X-API-Key": ""})
    assert response.status_code == 403 and "disabled" in response.json["error"]


def test_message_and_wait_for_the_answer(http, llm):
    # The chat's name is asked of the utility model after the first answer: answered here,
    # or on a slow machine it came after the second script and took "About 2 million.".
    llm.add_rule(model_is("util-model"), Reply("Capital of France"))
    llm.script(Reply(answer("Paris.")))
    response = http.post("/api/v1/message", json={"message": "Capital of France?"}, headers=KEY)
    assert response.status_code == 200 and response.json["response"] == "Paris."
    chat_id = response.json["context_id"]
    llm.script(Reply(answer("About 2 million.")))
    again = http.post("/api/v1/message", headers=KEY,
                      json={"message": "Population?", "context_id": chat_id})  # fmt: skip
    assert again.json == {"context_id": chat_id, "response": "About 2 million."}
    listed = http.get("/api/v1/chats", headers=KEY).json["chats"]
    assert [c["id"] for c in listed] == [chat_id]
    detail = http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json
    assert detail["running"] is False and detail["agents"][0]["profile"] == "agent0"
    assert [i["type"] for i in detail["log"]].count("response") == 2
    assert {"type", "heading", "content", "kvps", "agentno"} <= detail["log"][0].keys()


def test_a_profile_for_a_new_chat(http, llm):
    llm.script(Reply(answer("Found it.")))
    response = http.post("/api/v1/message", headers=KEY,
                         json={"message": "Research.", "profile": "researcher"})  # fmt: skip
    chat_id = response.json["context_id"]
    detail = http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json
    assert detail["agents"][0]["profile"] == "researcher"
    bad = http.post("/api/v1/message", headers=KEY, json={"message": "x", "profile": "ghost"})
    assert bad.status_code == 400 and "ghost" in bad.json["error"]


def test_no_wait_then_intervene_then_stop(http, server, llm):
    llm.script(Reply(answer("slow " * 60), chunk_size=4, delay=0.05), Reply(answer("changed")))
    started = http.post("/api/v1/message", headers=KEY, json={"message": "go", "wait": False})
    chat_id = started.json["context_id"]
    assert "response" not in started.json
    chat = chats_of(server).get(chat_id)
    wait_for(lambda: any(i.type == "response" for i in chat.log.items), what="streaming")
    answered = {}

    def intervene():
        body = {"message": "shorter", "context_id": chat_id}
        answered.update(http.post("/api/v1/message", headers=KEY, json=body).json)

    worker = threading.Thread(target=intervene)
    worker.start()
    worker.join(30)
    assert answered == {"context_id": chat_id, "response": "changed"}
    llm.script(Reply(answer("slow " * 60), chunk_size=4, delay=0.05))
    http.post("/api/v1/message", headers=KEY,
              json={"message": "again", "context_id": chat_id, "wait": False})  # fmt: skip
    wait_for(lambda: chat.running, what="the second run")
    assert http.post(f"/api/v1/chats/{chat_id}/stop", headers=KEY).json == {"stopped": True}
    wait_for(lambda: not chat.running, what="the stop")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "error"),
    [
        ("post", "/api/v1/message", {}, 400, "message: Field required"),
        ("post", "/api/v1/message", {"message": ""}, 400, "message"),
        ("post", "/api/v1/message", {"message": "x", "context_id": "nope"}, 404, "no chat"),
        ("post", "/api/v1/message", {"message": "x", "context_id": "../a"}, 400, "context_id"),
        ("get", "/api/v1/chats/nope", None, 404, "no chat with id"),
        ("post", "/api/v1/chats/nope/stop", None, 404, "no chat with id"),
    ],
)
def test_bad_input_gets_a_clear_json_error(http, server, method, path, body, status, error):
    response = getattr(http, method)(path, json=body, headers=KEY)
    assert response.status_code == status and error in response.json["error"]
    assert len(chats_of(server).registry) == 0


def test_an_oversized_body_is_refused(http, server):
    response = http.post("/api/v1/message", headers=KEY, json={"message": "x" * 2_000_000})
    assert response.status_code == 413 and "KB" in response.json["error"]
    assert len(chats_of(server).registry) == 0


def test_a_provider_failure_is_reported(http, llm, monkeypatch):
    monkeypatch.setenv("CADRE_LLM_RETRIES", "0")
    from tests.support.fake_llm import Fail

    llm.script(Fail(status=401, message="bad provider key"))
    response = http.post("/api/v1/message", headers=KEY, json={"message": "hi"})
    assert response.status_code == 502 and "bad provider key" in response.json["error"]


def test_delegation_over_the_api(http, llm):
    llm.script(
        Reply(reply("call_subordinate", message="Find X.", profile="researcher", reset=True)),
        Reply(answer("X found.")),
        Reply(answer("Here: X found.")),
    )
    response = http.post("/api/v1/message", headers=KEY, json={"message": "Find X."})
    assert response.json["response"] == "Here: X found."
    detail = http.get(f"/api/v1/chats/{response.json['context_id']}", headers=KEY).json
    assert [a["profile"] for a in detail["agents"]] == ["agent0", "researcher"]


def test_a_message_that_arrives_as_a_run_ends_gets_its_own_answer(http, server, llm, usr_dir):
    import threading as _threading

    from tests.support import probe
    from tests.support.agents import make_profile

    probe.reset()
    make_profile(usr_dir, "fin", tools={"finish": probe.FINISH_TOOL})
    probe.gates["finish"] = _threading.Event()
    llm.script(Reply(reply("finish")), Reply(answer("answer to the second message")))
    started = http.post("/api/v1/message", headers=KEY,
                        json={"message": "first", "profile": "fin", "wait": False})  # fmt: skip
    chat_id = started.json["context_id"]
    wait_for(lambda: probe.calls == ["finish"], what="the final tool")
    answered = {}
    worker = _threading.Thread(
        target=lambda: answered.update(
            http.post(
                "/api/v1/message", headers=KEY, json={"message": "second", "context_id": chat_id}
            ).json
        )
    )
    worker.start()
    wait_for(lambda: chats_of(server).get(chat_id).agent0.intervention is not None,
             what="the second message waiting")  # fmt: skip
    probe.gates["finish"].set()  # the run ends without reading it: a new run answers it
    worker.join(30)
    assert answered == {"context_id": chat_id, "response": "answer to the second message"}


def test_profile_with_an_existing_chat_is_refused(http, llm):
    llm.script(Reply(answer("hi")))
    chat_id = http.post("/api/v1/message", headers=KEY, json={"message": "a"}).json["context_id"]
    both = {"message": "b", "context_id": chat_id, "profile": "researcher"}
    response = http.post("/api/v1/message", headers=KEY, json=both)
    assert response.status_code == 400 and "new chat" in response.json["error"]


def test_an_answer_is_on_disk_before_the_reply_goes_out(http, llm, usr_dir, monkeypatch):
    """Right after POST /api/v1/message returned, chat.json did not hold the answer yet (it
    did a second later): a crash in that second lost what the client was told. The chat's
    writes are slowed here, as on a busy disk, so the order shows."""
    real_write = persist_chat.write_chat

    def slowly(chat, path=None):
        time.sleep(0.3)
        real_write(chat, path)

    monkeypatch.setattr(persist_chat, "write_chat", slowly)
    llm.add_rule(model_is("util-model"), Reply("Greeting"))
    llm.script(Reply(answer("Saved before said.")))
    response = http.post("/api/v1/message", json={"message": "hi"}, headers=KEY)
    assert response.status_code == 200
    saved = json.loads((usr_dir / "chats" / response.json["context_id"] / "chat.json").read_text())
    assert not saved["running"]
    assert "Saved before said." in [item["content"] for item in saved["log"]["items"]]
