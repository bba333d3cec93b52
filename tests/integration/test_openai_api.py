"""The OpenAI-compatible endpoint, driven by the official `openai` client against a real
run_ui.py (the one test modules share, tests/support/shared_desktop.py) whose models are
the scripted fake server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import requests

from tests.support import shared_desktop
from tests.support.agents import answer, reply
from tests.support.fake_llm import Fail, Reply, model_is
from tests.support.server_process import ServerProcess, call_api

KEY = shared_desktop.KEY
#: Generous: the machine is shared, and the server's first model call is slow.
TIMEOUT = 120


@pytest.fixture(scope="module")
def shared(desktop_server) -> Iterator[ServerProcess]:
    """The shared run_ui.py (its first model call made), model calls not retried: a failed
    one is the test's answer at once."""
    with shared_desktop.for_module(desktop_server, llm_retries=0) as server:
        yield server


@pytest.fixture
def client(shared, llm) -> openai.OpenAI:
    # Utility calls (naming a chat) get this reply, never a scripted one, and cost nothing,
    # so a run's usage is exactly what its scripted replies say.
    llm.add_rule(model_is("util-model"), Reply("Named", usage=(0, 0)))
    return openai.OpenAI(base_url=f"{shared.url}/v1", api_key=KEY, max_retries=0,
                         timeout=TIMEOUT)  # fmt: skip


def chat_ids(server: ServerProcess) -> set[str]:
    return {c["id"] for c in call_api(server, "GET", "/api/v1/chats", key=KEY)["chats"]}


def usr(server: ServerProcess) -> Path:
    return Path(server.env["CADRE_USR_DIR"])


def chat_model_requests(llm) -> list[dict]:
    return [r.body for r in llm.chat_requests("chat-model")]


def test_the_models_are_cadre_and_one_per_profile(client):
    names = [model.id for model in client.models.list()]
    assert names[0] == "cadre"
    assert {"cadre/agent0", "cadre/researcher"} <= set(names)


def test_a_completion(client, shared, llm):
    llm.script(Reply(answer("Paris."), usage=(100, 20)))
    before = chat_ids(shared)
    done = client.chat.completions.create(
        model="cadre", messages=[{"role": "user", "content": "Capital of France?"}]
    )
    assert done.object == "chat.completion" and done.model == "cadre"
    assert done.choices[0].message.content == "Paris."
    assert done.choices[0].finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (100, 20)
    assert done.usage.total_tokens == 120
    (new,) = chat_ids(shared) - before  # a chat like any other, in the list
    detail = call_api(shared, "GET", f"/api/v1/chats/{new}", key=KEY)
    assert [i["content"] for i in detail["log"] if i["type"] == "user"] == ["Capital of France?"]


def test_a_streamed_completion_shows_the_agents_work_then_the_answer(client, shared, llm):
    held = threading.Event()  # Agent 0's answer waits until progress has come
    call = reply("call_subordinate", headline="Asking the researcher",
                 thoughts=["The researcher knows."], message="Find X.", profile="researcher",
                 reset=True)  # fmt: skip
    llm.script(
        Reply(call, usage=(50, 10)),
        Reply(answer("X is at the dock."), usage=(30, 5)),
        Reply(answer("Here: X is at the dock."), usage=(70, 8), gate=held),
    )
    before = chat_ids(shared)
    stream = client.chat.completions.create(
        model="cadre", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Where is X?"}],
    )  # fmt: skip
    chunks = []
    for got in stream:
        chunks.append(got)
        if not held.is_set() and got.choices and getattr(got.choices[0].delta,
                                                         "reasoning_content", None):  # fmt: skip
            # Progress comes while the agents work, not with the answer.
            (chat_id,) = chat_ids(shared) - before
            assert call_api(shared, "GET", f"/api/v1/chats/{chat_id}", key=KEY)["running"]
            held.set()
    assert held.is_set()
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    content = "".join(d.content or "" for d in deltas)
    assert content == "Here: X is at the dock."
    assert "A0: Asking the researcher" in reasoning and "- The researcher knows." in reasoning
    assert "A1: Responding\nX is at the dock." in reasoning  # the subordinate's answer
    first_reasoning = next(i for i, d in enumerate(deltas) if getattr(d, "reasoning_content", ""))
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    assert first_reasoning < first_content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (150, 23)


def test_a_continued_conversation_lands_in_the_same_chat(client, shared, llm):
    llm.script(Reply(answer("Hello, Ada.")), Reply(answer("You said: Ada.")))
    before = chat_ids(shared)
    first = [{"role": "user", "content": "I am Ada."}]
    said = client.chat.completions.create(model="cadre", messages=first)
    (chat_id,) = chat_ids(shared) - before
    turn = [*first, {"role": "assistant", "content": said.choices[0].message.content},
            {"role": "user", "content": "Who am I?"}]  # fmt: skip
    again = client.chat.completions.create(model="cadre", messages=turn)
    assert again.choices[0].message.content == "You said: Ada."
    assert chat_ids(shared) - before == {chat_id}
    detail = call_api(shared, "GET", f"/api/v1/chats/{chat_id}", key=KEY)
    users = [i["content"] for i in detail["log"] if i["type"] == "user"]
    assert users == ["I am Ada.", "Who am I?"]
    # The model got the chat's own history, not the client's transcript again.
    sent = chat_model_requests(llm)[-1]["messages"]
    assert not any("conversation so far" in str(m["content"]) for m in sent)
    assert (usr(shared) / "openai_conversations.json").exists()


def test_a_new_conversation_with_history_gives_agent0_the_earlier_messages(client, shared, llm):
    llm.script(Reply(answer("Your name is Ada.")))
    before = chat_ids(shared)
    done = client.chat.completions.create(model="cadre/researcher", messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Nice to meet you, Ada."},
        {"role": "user", "content": [{"type": "text", "text": "What is"},
                                     {"type": "text", "text": "my name?"}]},
    ])  # fmt: skip
    assert done.choices[0].message.content == "Your name is Ada."
    told = chat_model_requests(llm)[-1]["messages"][-1]["content"]
    assert told.startswith("What is\nmy name?")
    for part in ("[system]\nBe brief.", "[user]\nMy name is Ada.",
                 "[assistant]\nNice to meet you, Ada."):  # fmt: skip
        assert part in told
    assert told.index("[user]\nMy name is Ada.") < told.index("[assistant]\nNice to meet you")
    (chat_id,) = chat_ids(shared) - before
    detail = call_api(shared, "GET", f"/api/v1/chats/{chat_id}", key=KEY)
    assert detail["agents"][0]["profile"] == "researcher"
    assert [i["heading"] for i in detail["log"]][:2] == ["Conversation so far", "User message"]
    assert detail["log"][0]["content"].startswith("[system]\nBe brief.\n\n[user]\nMy name")


def test_a_history_too_long_for_one_message_keeps_its_newest_turns(client, llm):
    llm.script(Reply(answer("Noted.")))
    long = [{"role": role, "content": f"{n}:" + "w" * 90_000}
            for n, role in enumerate(["user", "assistant", "user"])]  # fmt: skip
    client.chat.completions.create(
        model="cadre", messages=[*long, {"role": "user", "content": "Go on."}]
    )
    told = chat_model_requests(llm)[-1]["messages"][-1]["content"]
    assert "(1 earlier messages of it were left out for length.)" in told
    assert "[user]\n0:" not in told and "[assistant]\n1:" in told and "[user]\n2:" in told


def test_a_model_failure_in_a_stream_is_an_error_event(client, llm):
    llm.script(Fail(status=401, message="bad provider key"))
    stream = client.chat.completions.create(
        model="cadre", stream=True, messages=[{"role": "user", "content": "hi"}]
    )
    with pytest.raises(openai.APIError, match="bad provider key"):
        list(stream)


def raw(server: ServerProcess, body: bytes, **headers: str) -> requests.Response:
    return requests.post(f"{server.url}/v1/chat/completions", data=body, timeout=TIMEOUT,
                         headers={"Content-Type": "application/json", **headers})  # fmt: skip


def assert_openai_error(response: requests.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


def test_a_missing_or_wrong_key_is_refused(shared, client):
    with pytest.raises(openai.AuthenticationError) as wrong:
        openai.OpenAI(base_url=f"{shared.url}/v1", api_key="nope",
                      max_retries=0).models.list()  # fmt: skip
    assert wrong.value.status_code == 401 and wrong.value.body["code"] == "invalid_api_key"
    missing = raw(shared, b'{"model": "cadre", "messages": []}')
    assert assert_openai_error(missing, 401)["type"] == "authentication_error"
    assert client.models.list()  # the right key in X-API-Key works too:
    by_header = requests.get(f"{shared.url}/v1/models", headers={"X-API-Key": KEY}, timeout=30)
    assert by_header.status_code == 200


BAD_BODIES = [
    (b'{"model": "cadre"', "not valid JSON"),
    (b'["not", "an", "object"]', "JSON object"),
    (b'{"model": "cadre"}', "messages: Field required"),
    (b'{"model": "cadre", "messages": [{"role": "robot", "content": "hi"}]}', "messages.0.role"),
    (b'{"model": "cadre", "messages": [{"role": "system", "content": "x"}]}', "no user message"),
    (
        b'{"model": "cadre", "messages": [{"role": "user", "content": "a"}, '
        b'{"role": "assistant", "content": "b"}]}',
        "last message must be the user's",
    ),
    (
        b'{"model": "cadre", "messages": [{"role": "user", "content": "\\ud800 hi"}]}',
        "not valid Unicode",
    ),
    (b'{"model": "cadre", "messages": [{"role": "user", "content": "\xff\xfe"}]}', "not UTF-8"),
    (
        b'{"model": "cadre", "messages": [{"role": "user", "content": '
        b'[{"type": "image_url", "image_url": {"url": "x"}}]}]}',
        "only text parts",
    ),
]


@pytest.mark.parametrize(("body", "says"), BAD_BODIES)
def test_a_bad_body_is_a_400_in_the_openai_shape(shared, client, body, says):
    before = chat_ids(shared)
    error = assert_openai_error(raw(shared, body, Authorization=f"Bearer {KEY}"), 400)
    assert says in error["message"] and error["type"] == "invalid_request_error"
    assert chat_ids(shared) == before


def test_the_client_sees_a_bad_request(client):
    with pytest.raises(openai.BadRequestError, match="no user message"):
        client.chat.completions.create(model="cadre",
                                       messages=[{"role": "system", "content": "x"}])  # fmt: skip


def test_an_unknown_model_is_a_404(shared, client):
    before = chat_ids(shared)
    with pytest.raises(openai.NotFoundError) as found:
        client.chat.completions.create(model="cadre/ghost",
                                       messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    assert found.value.body["code"] == "model_not_found" and "ghost" in found.value.message
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert chat_ids(shared) == before
    elsewhere = requests.get(f"{shared.url}/v1/embeddings", headers={"X-API-Key": KEY}, timeout=30)
    assert assert_openai_error(elsewhere, 404)["code"] == "not_found"


def test_an_oversized_body_is_a_413(shared, client):
    big = json.dumps({"model": "cadre",
                      "messages": [{"role": "user", "content": "x" * 5_000_000}]})  # fmt: skip
    error = assert_openai_error(raw(shared, big.encode(), Authorization=f"Bearer {KEY}"), 413)
    assert "MB" in error["message"]
    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(
            model="cadre", messages=[{"role": "user", "content": "x" * 5_000_000}]
        )
    assert refused.value.status_code == 413
