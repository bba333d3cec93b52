"""A2A, for real: the a2a-sdk's own client against a real Cadre (models on the scripted
fake server), and a Cadre agent delegating to a second real Cadre with `a2a_call`.

The remote Cadre is the server test modules share (tests/support/shared_desktop.py, its
own usr/ and the shared model script); the calling Cadre is this module's, with its own
usr/, its own model script and the remote agents in its settings (the right key, and a
wrong one).
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import requests
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    ClientConfig,
    ClientFactory,
    create_client,
)
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

from tests.support import shared_desktop
from tests.support.a2a_cards import CardServer, card_server
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Fail, FakeLLMServer, Reply, model_is, start_fake_llm
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess, free_port
from tests.support.shared_desktop import module_cadre, naming_fake  # noqa: F401 (fixtures)

KEY = shared_desktop.KEY
CALLER_KEY = "k-caller-secret-0123456789"


@pytest.fixture(scope="module")
def caller_llm() -> Iterator[FakeLLMServer]:
    server = start_fake_llm()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def liar() -> Iterator[CardServer]:
    """An agent card that sends tasks to another address than its own (`localhost` for
    127.0.0.1): nothing may be sent there."""
    card = card_server(lambda port: f"http://localhost:{port}/a2a")
    yield card
    card.stop()


@pytest.fixture(scope="module")
def caller(cadre: ServerProcess, caller_llm: FakeLLMServer, liar: CardServer,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:  # fmt: skip
    """A second Cadre whose agents may call the shared one ("helper"), the shared one
    again with a wrong key ("stranger"), an address nothing listens on ("gone"), and a
    card that names another address ("liar")."""
    remote = [{"name": "helper", "url": cadre.url, "key": KEY},
              {"name": "stranger", "url": cadre.url, "key": "k-wrong-0123456789"},
              {"name": "gone", "url": f"http://127.0.0.1:{free_port()}"},
              {"name": "liar", "url": liar.url, "key": "k-liar-0123456789"}]  # fmt: skip
    server = live_server(tmp_path_factory.mktemp("caller"), caller_llm.base_url,
                         api_key=CALLER_KEY, a2a_agents=json.dumps(remote),
                         llm_retry_delay="0.01")  # fmt: skip
    yield server
    server.stop()


def send_request(text: str, context_id: str = "") -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)],
                      context_id=context_id or None)  # fmt: skip
    return SendMessageRequest(message=message)


async def events_of(cadre: ServerProcess, text: str, context_id: str = "",
                    key: str = KEY) -> list:  # fmt: skip
    """Every event of a streamed task, sent by the SDK's client with `key`."""
    async with httpx.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http:
        client = await create_client(cadre.url, ClientConfig(streaming=True, httpx_client=http))
        try:
            return [event async for event in client.send_message(send_request(text, context_id))]
        finally:
            await client.close()


@contextlib.asynccontextmanager
async def task_at_work(cadre: ServerProcess, key: str,
                       held: threading.Event) -> AsyncIterator[tuple[Any, Any]]:  # fmt: skip
    """A streamed task sent with `key` whose model reply the test holds (`held`, let go
    at the end): the SDK's client and the task's first `working` update ("Cadre chat <id>
    is working on it")."""
    async with httpx.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http:
        client = await create_client(cadre.url, ClientConfig(streaming=True, httpx_client=http))
        stream = client.send_message(send_request("Take your time."))
        try:
            update = None
            async for event in stream:
                if event.HasField("status_update"):
                    update = event.status_update
                    break
            assert update is not None, "the task never began"
            yield client, update
        finally:
            held.set()
            await stream.aclose()
            await client.close()


def test_the_card_is_public_and_names_no_secret(cadre):
    got = requests.get(f"{cadre.url}/.well-known/agent-card.json", timeout=10)
    assert got.status_code == 200, got.text
    card = got.json()
    assert card["supportedInterfaces"][0]["url"] == f"{cadre.url}/a2a"
    assert card["capabilities"]["streaming"] is True
    assert card["url"] == f"{cadre.url}/a2a" and card["protocolVersion"] == "0.3"  # 0.3's too
    assert {"default", "researcher"} <= {skill["id"] for skill in card["skills"]}
    assert {"apiKey", "bearer"} == set(card["securitySchemes"])
    assert KEY not in got.text and "test-key" not in got.text


async def test_a_wrong_or_missing_key_is_refused(cadre, fake):
    with pytest.raises(A2AClientError, match="401"):
        await events_of(cadre, "Hello?", key="k-wrong-0123456789")
    bare = requests.post(f"{cadre.url}/a2a", json={"jsonrpc": "2.0", "id": 1,
                         "method": "SendMessage", "params": {}}, timeout=10)  # fmt: skip
    assert bare.status_code == 401
    assert "missing or wrong API key" in bare.json()["error"]["message"]
    assert fake.chat_requests() == []  # no agent ran


async def test_a_client_of_the_protocols_0_3_is_answered_too(cadre, fake):
    """The same endpoint, spoken in the protocol's 0.3 (the SDK's compatibility transport,
    chosen by a card that offers 0.3 alone)."""
    fake.script(Reply(answer("Hello from 0.3.")))
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as http:
        card = await A2ACardResolver(http, cadre.url).get_agent_card()
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        try:
            events = [e async for e in client.send_message(send_request("Hello?"))]
        finally:
            await client.close()
    assert type(client._transport).__name__ == "CompatJsonRpcTransport"  # noqa: SLF001
    final = events[-1].status_update.status
    assert TaskState.Name(final.state) == "TASK_STATE_COMPLETED"
    assert get_message_text(final.message) == "Hello from 0.3."


async def test_the_sdk_client_gets_steps_a_file_and_the_answer_then_continues(cadre, fake):
    fake.script(
        Reply(reply("text_editor:write", headline="Writing the report", path="report.txt",
                    content="Sales rose 5%.\n")),
        Reply(answer("The report is in report.txt.")),
        Reply(answer("It says sales rose 5%.")),
    )  # fmt: skip
    events = await events_of(cadre, "Write a short report.")
    states = [TaskState.Name(e.status_update.status.state) for e in events
              if e.HasField("status_update")]  # fmt: skip
    steps = [get_message_text(e.status_update.status.message) for e in events
             if e.HasField("status_update")]  # fmt: skip
    artifacts = {e.artifact_update.artifact.name: e.artifact_update.artifact for e in events
                 if e.HasField("artifact_update")}  # fmt: skip
    assert states[0] == "TASK_STATE_WORKING" and states[-1] == "TASK_STATE_COMPLETED"
    assert any("Writing the report" in step for step in steps), steps
    assert steps[-1] == "The report is in report.txt."
    assert artifacts["report.txt"].parts[0].raw == b"Sales rose 5%.\n"
    assert get_artifact_text(artifacts["answer"]) == "The report is in report.txt."
    context_id = events[-1].status_update.context_id
    chat_id = steps[0].split()[2]  # "Cadre chat <id> is working on it"

    again = await events_of(cadre, "What does it say?", context_id)
    assert get_message_text(again[-1].status_update.status.message) == "It says sales rose 5%."
    log = requests.get(f"{cadre.url}/api/v1/chats/{chat_id}", headers={"X-API-Key": KEY},
                       timeout=10).json()["log"]  # fmt: skip
    assert [item["type"] for item in log].count("response") == 2  # one chat, two answers


async def test_a_file_sent_with_a_task_is_attached_and_one_by_address_refused(cadre, fake):
    """A task's file parts were dropped without a word before: their bytes are now the
    chat's attachments, as the page's; a file named by its address is refused, not fetched."""
    fake.script(Reply(answer("The list has three items.")))
    parts = [Part(text="How many items?"), Part(raw=b"eggs\nmilk\nbread\n", filename="list.txt")]
    sent = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts)
    async with httpx.AsyncClient(headers={"X-API-Key": KEY}, timeout=60) as http:
        client = await create_client(cadre.url, ClientConfig(streaming=True, httpx_client=http))
        try:
            events = [e async for e in client.send_message(SendMessageRequest(message=sent))]
            del sent.parts[1:]
            sent.message_id = uuid.uuid4().hex
            sent.parts.append(Part(url="http://127.0.0.1:9/private.pdf"))
            refused = [e async for e in client.send_message(SendMessageRequest(message=sent))]
        finally:
            await client.close()
    final = events[-1].status_update.status
    assert get_message_text(final.message) == "The list has three items."
    working = next(e.status_update for e in events if e.HasField("status_update"))
    chat_id = get_message_text(working.status.message).split()[2]  # "Cadre chat <id> is..."
    saved = cadre.usr_dir / "chats" / chat_id / "attachments" / "list.txt"
    assert saved.read_bytes() == b"eggs\nmilk\nbread\n"
    asked = fake.chat_requests("chat-model")
    assert str(saved) in str(asked[-1].body["messages"][-1]["content"])
    state = refused[-1].status_update.status
    assert TaskState.Name(state.state) == "TASK_STATE_REJECTED"
    assert "names a file by its address" in get_message_text(state.message)
    assert len(fake.chat_requests("chat-model")) == len(asked)  # no agent ran for it


async def test_cancelling_a_task_stops_its_chat(cadre, fake):
    held = threading.Event()  # the model's reply, held until the task is cancelled
    fake.script(Reply(answer("Too late."), gate=held))
    async with task_at_work(cadre, KEY, held) as (client, update):
        canceled = await client.cancel_task(CancelTaskRequest(id=update.task_id))
    assert TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELED"
    chat_url = f"{cadre.url}/api/v1/chats/{get_message_text(update.status.message).split()[2]}"

    def stopped() -> bool:
        chat = requests.get(chat_url, headers={"X-API-Key": KEY}, timeout=10).json()["chat"]
        return chat["running"] is False

    wait_for(stopped, timeout=30, what="the task's chat to stop")


def test_a_cadre_agent_delegates_to_another_cadre_over_a2a(cadre, caller, caller_llm, fake,
                                                            liar):  # fmt: skip
    caller_llm.reset()
    caller_llm.add_rule(model_is("util-model"), Reply("A chat"))
    caller_llm.script(
        Reply(reply("a2a_call", agent="nobody", message="What is 6*7?")),
        Reply(reply("a2a_call", agent="stranger", message="What is 6*7?")),
        Reply(reply("a2a_call", agent="gone", message="What is 6*7?")),
        Reply(reply("a2a_call", agent="liar", message="What is 6*7?")),
        Reply(reply("a2a_call", agent="helper", message="What is 6*7?")),
        Reply(reply("a2a_call", agent="helper", message="What is 6*7, again?")),
        Reply(answer("The helper says 42.")),
    )  # fmt: skip
    fake.script(Fail(400, "the remote model broke"), Reply(answer("42")))
    sent = requests.post(f"{caller.url}/api/v1/message",
                         json={"message": "Ask the helper what 6*7 is.", "wait": True},
                         headers={"X-API-Key": CALLER_KEY}, timeout=120)  # fmt: skip
    assert sent.status_code == 200, sent.text
    assert sent.json()["response"] == "The helper says 42."
    last = [r.messages[-1]["content"] for r in caller_llm.chat_requests("chat-model")]
    assert "no remote agent named 'nobody'" in last[1] and "helper, liar, stranger" in last[1]
    assert "refused Cadre's key" in last[2] and "HTTP 401" in last[2]
    assert "gone could not be reached" in last[3]
    assert "liar went wrong" in last[4] and "key is sent only to the address" in last[4]
    assert liar.seen == ["GET /.well-known/agent-card.json"]  # no task sent elsewhere
    assert "helper failed without an answer" in last[5]
    assert "42" in last[6] and cadre.url in last[6]  # marked as from there
    log = requests.get(f"{caller.url}/api/v1/chats/{sent.json()['context_id']}",
                       headers={"X-API-Key": CALLER_KEY}, timeout=10).json()["log"]  # fmt: skip
    progress = [item["heading"] for item in log if item["type"] == "info"]
    assert any(heading.startswith("A0: helper (A2A): Cadre chat") for heading in progress)
    assert KEY not in json.dumps(log)


def test_settings_show_the_keys_masked_and_a_save_keeps_them_for_their_address(http, usr_dir):
    entry = {"name": "helper", "url": "http://127.0.0.1:9", "key": "k-settings-5678"}
    assert http.post("/api/settings", json={"a2a_agents": [entry]}).status_code == 200
    shown = http.get("/api/settings").json["a2a_agents"]
    assert shown == [{**entry, "key": "***"}]
    moved = {**shown[0], "name": "moved", "url": "http://127.0.0.1:10"}
    assert http.post("/api/settings", json={"a2a_agents": [shown[0], moved]}).status_code == 200
    stored = json.loads((usr_dir / "settings.json").read_text())["a2a_agents"]
    assert [agent["key"] for agent in stored] == ["k-settings-5678", ""]


def test_stopping_the_callers_chat_cancels_the_remote_task(cadre, caller, caller_llm, fake):
    caller_llm.reset()
    caller_llm.add_rule(model_is("util-model"), Reply("A chat"))
    caller_llm.script(Reply(reply("a2a_call", agent="helper", message="Count to a million.")))
    held = threading.Event()  # the remote model's reply, held until the caller stops
    fake.script(Reply(answer("Done counting."), gate=held))
    headers = {"X-API-Key": CALLER_KEY}
    try:
        sent = requests.post(f"{caller.url}/api/v1/message", json={"message": "Go.", "wait": False},
                             headers=headers, timeout=30)  # fmt: skip
        assert sent.status_code == 200, sent.text
        wait_for(lambda: shared_desktop.running(cadre), timeout=30, what="the remote run")
        remote_chats = shared_desktop.running(cadre)
        stop = requests.post(f"{caller.url}/api/v1/chats/{sent.json()['context_id']}/stop",
                             headers=headers, timeout=30)  # fmt: skip
        assert stop.status_code == 200, stop.text
        wait_for(lambda: not shared_desktop.running(cadre), timeout=30, what="the remote stop")
    finally:
        held.set()
    # Stopped, not answered: the held reply reached no run.
    log = requests.get(f"{cadre.url}/api/v1/chats/{remote_chats[0]}", headers={"X-API-Key": KEY},
                       timeout=10).json()["log"]  # fmt: skip
    assert "response" not in [item["type"] for item in log]


async def task_of(cadre: ServerProcess, task_id: str, key: str):
    """The task as `tasks/get` tells it, asked by the SDK's client with `key`."""
    async with httpx.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http:
        client = await create_client(cadre.url, ClientConfig(httpx_client=http))
        try:
            return await client.get_task(GetTaskRequest(id=task_id))
        finally:
            await client.close()


async def test_a_follow_up_after_a_restart_goes_on_in_the_same_chat(caller, caller_llm):
    """Which chat a context is lives in usr/a2a/contexts.json, and the tasks in
    usr/a2a/tasks/: a restart forgot both before."""
    caller_llm.reset()
    caller_llm.add_rule(model_is("util-model"), Reply("A chat"))
    caller_llm.script(Reply(answer("Noted: blue.")), Reply(answer("Blue, as you said.")))
    first = await events_of(caller, "My colour is blue.", key=CALLER_KEY)
    context_id = first[-1].status_update.context_id
    chat_id = next(get_message_text(e.status_update.status.message) for e in first
                   if e.HasField("status_update")).split()[2]  # fmt: skip
    caller.restart()
    kept_task = await task_of(caller, first[-1].status_update.task_id, CALLER_KEY)
    assert TaskState.Name(kept_task.status.state) == "TASK_STATE_COMPLETED"
    assert get_artifact_text(kept_task.artifacts[-1]) == "Noted: blue."
    again = await events_of(caller, "Which colour?", context_id, key=CALLER_KEY)
    steps = [get_message_text(e.status_update.status.message) for e in again
             if e.HasField("status_update")]  # fmt: skip
    assert steps[0] == f"Cadre chat {chat_id} is working on it"
    assert steps[-1] == "Blue, as you said."
    kept = caller.usr_dir / "a2a" / "contexts.json"
    assert kept.stat().st_mode & 0o777 == 0o600
    assert chat_id in kept.read_text()


async def test_a_task_cut_off_by_a_restart_is_told_failed_and_its_chat_goes_on(caller, caller_llm):
    """A task that was working when its Cadre stopped can never finish: `tasks/get` says so
    (it said "working" for ever), and the same context goes on in the same chat."""
    caller_llm.reset()
    caller_llm.add_rule(model_is("util-model"), Reply("A chat"))
    held = threading.Event()
    caller_llm.script(Reply(answer("Never heard."), gate=held),
                      Reply(answer("Back again.")))  # fmt: skip
    async with task_at_work(caller, CALLER_KEY, held) as (_, update):
        # Its model call held at the fake server (else the restart could come first, and
        # the reply meant for it answer the follow-up).
        wait_for(lambda: caller_llm.chat_requests("chat-model"), what="the held call")
        caller.restart()
    told = await task_of(caller, update.task_id, CALLER_KEY)
    assert TaskState.Name(told.status.state) == "TASK_STATE_FAILED"
    assert "The Cadre that ran this task stopped" in get_message_text(told.status.message)
    again = await events_of(caller, "Still there?", update.context_id, key=CALLER_KEY)
    steps = [get_message_text(e.status_update.status.message) for e in again
             if e.HasField("status_update")]  # fmt: skip
    chat_id = get_message_text(update.status.message).split()[2]
    assert steps[0] == f"Cadre chat {chat_id} is working on it"
    assert steps[-1] == "Back again."
