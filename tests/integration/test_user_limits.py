"""Per-user limits and everyone's usage against a real run_ui.py (issue 35): an admin sets
a member's chats at once, tokens and cost per day and upload size; the member over a
limit is refused in plain words, on every way in, while another member is served; a
running chat stops at its next step with the same words; usage is listed per user.

The test process's shared server with accounts serves the module (tests/support/
shared_accounts.py); each test makes the members it uses. The chat model is one litellm
can price (gpt-4o-mini, served by the fake server), so that cost counts.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.integration.test_accounts import Member, api, page, socket_of
from tests.support import shared_accounts
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import FakeLLMServer, Reply, last_user_contains, model_is
from tests.support.live_web import ack, close_socket, csrf_token
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN

MB = 1024 * 1024
#: The members' default upload limit, from the settings (the module's, in settings.json).
MEMBERS_UPLOAD_MB = 50


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    with shared_accounts.for_module(accounts_server, chat_model="openai/gpt-4o-mini",
                                    member_upload_mb=MEMBERS_UPLOAD_MB) as server:  # fmt: skip
        yield server


@pytest.fixture
def fake(_fake_llm_server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The fake model server emptied, naming calls answered."""
    _fake_llm_server.reset()
    _fake_llm_server.add_rule(model_is("util-model"), Reply("Named"))
    yield _fake_llm_server
    _fake_llm_server.reset()


def limit(cadre: ServerProcess, member: Member, **limits: Any) -> dict[str, Any]:
    changed = api(cadre, "PATCH", f"/users/{member.name}", body={"limits": limits})
    assert changed.status_code == 200, changed.text
    return dict(changed.json()["user"]["limits"])


def message(cadre: ServerProcess, member: Member, text: str, wait: bool = True,
            chat_id: str | None = None) -> requests.Response:  # fmt: skip
    body: dict[str, Any] = {"message": text, "wait": wait}
    if chat_id:
        body["context_id"] = chat_id
    return api(cadre, "POST", "/message", member.key, body)


def mcp_send(cadre: ServerProcess, member: Member, text: str) -> tuple[bool, str]:
    """The MCP tool send_message called with the member's key: (is an error, its text)."""

    async def call() -> tuple[bool, str]:
        http = create_mcp_http_client(headers={"X-API-Key": member.key})
        async with http, Client(streamable_http_client(f"{cadre.url}/mcp",
                                                       http_client=http)) as client:  # fmt: skip
            called = await client.call_tool("send_message", {"message": text})
            return bool(called.is_error), str(called.content[0].text)

    return asyncio.run(call())


def chat_ids(cadre: ServerProcess, member: Member) -> set[str]:
    return {c["id"] for c in api(cadre, "GET", "/chats", member.key).json()["chats"]}


def test_the_admin_sets_limits_and_sees_them_in_force(cadre):
    ann = Member(cadre)
    assert limit(cadre, ann, max_runs=2, cost_per_day=0.5) == {
        "max_runs": 2, "tokens_per_day": None, "cost_per_day": 0.5, "upload_mb": None}  # fmt: skip
    # null puts one back to the members' default; a field not sent stays.
    assert limit(cadre, ann, max_runs=None)["cost_per_day"] == 0.5
    rows = {u["name"]: u for u in api(cadre, "GET", "/users").json()["users"]}
    assert rows[ann.name]["limits_in_force"] == {
        "max_runs": 0, "tokens_per_day": 0, "cost_per_day": 0.5,
        "upload_mb": MEMBERS_UPLOAD_MB}  # fmt: skip
    assert rows[ADMIN]["limits_in_force"]["upload_mb"] == 0  # admins: only their own
    # Only an admin sets limits; a misspelt limit is named, not ignored.
    own = page(ann.browser, cadre, "PATCH", f"/api/users/{ann.name}",
               {"limits": {"max_runs": 0}})  # fmt: skip
    assert own.status_code == 403 and "limits" in own.json()["error"]
    typo = api(cadre, "PATCH", f"/users/{ann.name}", body={"limits": {"max_run": 1}})
    assert typo.status_code == 400 and "max_run" in typo.json()["error"]
    negative = api(cadre, "PATCH", f"/users/{ann.name}", body={"limits": {"upload_mb": -1}})
    assert negative.status_code == 400
    # A limit changed keeps the member logged in.
    assert page(ann.browser, cadre, "GET", "/api/usage").status_code == 200


def test_a_member_at_max_runs_is_refused_a_second_chat_while_another_member_runs(cadre, fake):
    ann, bea = Member(cadre), Member(cadre)
    limit(cadre, ann, max_runs=1)
    limit(cadre, bea, max_runs=1)
    held = threading.Event()
    fake.add_rule(last_user_contains("ann's long task"), Reply(answer("long done"), gate=held))
    fake.add_rule(last_user_contains("ann's second"), Reply(answer("second done")))
    fake.add_rule(last_user_contains("bea's task"), Reply(answer("bea done")))
    fake.add_rule(last_user_contains("step in"), Reply(answer("noted")))
    try:
        first = message(cadre, ann, "ann's long task", wait=False)
        assert first.status_code == 200, first.text
        running = first.json()["context_id"]
        before = chat_ids(cadre, ann)
        words = "You already have 1 chat working, the most your account may run at once (1)"
        # The external API: a 429 with the words, and no empty chat left behind.
        refused = message(cadre, ann, "ann's second")
        assert refused.status_code == 429 and words in refused.json()["error"]
        assert chat_ids(cadre, ann) == before
        # The page: a chat of hers that is not running refuses to start.
        client, _ = socket_of(ann.browser, cadre)
        try:
            idle = ack(client, "chat:new", {})["chat"]["id"]
            sent = ack(client, "chat:send", {"chat_id": idle, "message": "ann's second"})
            assert words in sent["error"]
        finally:
            close_socket(client)
        # The OpenAI-compatible endpoint, in its own shape.
        completion = requests.post(
            f"{cadre.url}/v1/chat/completions", headers={"Authorization": f"Bearer {ann.key}"},
            json={"model": "cadre", "messages": [{"role": "user", "content": "ann's second"}]},
            timeout=30,
        )  # fmt: skip
        assert completion.status_code == 429, completion.text
        assert words in completion.json()["error"]["message"]
        # Agent Zero's /api_message.
        zero = requests.post(f"{cadre.url}/api_message", headers={"X-API-Key": ann.key},
                             json={"message": "ann's second"}, timeout=30)  # fmt: skip
        assert zero.status_code == 429 and words in zero.json()["error"]
        # The MCP server's send_message: a tool error in the same words.
        failed, said = mcp_send(cadre, ann, "ann's second")
        assert failed and said.endswith(refused.json()["error"])
        # Her scheduled task's run: its result says why it did not run.
        task = api(cadre, "POST", "/tasks", ann.key, {"name": "report", "kind": "adhoc",
                                                      "prompt": "ann's second"}).json()  # fmt: skip
        assert api(cadre, "POST", f"/tasks/{task['id']}/run", ann.key).status_code == 202

        def task_ran() -> dict[str, Any] | None:
            found = api(cadre, "GET", f"/tasks/{task['id']}", ann.key).json()
            return found if found["last_status"] == "error" else None

        assert words in wait_for(task_ran, timeout=30, what="the task's run")["last_result"]
        # Stepping into the running chat is not a new run: never refused.
        joined = message(cadre, ann, "step in", wait=False, chat_id=running)
        assert joined.status_code == 200, joined.text
        # Another member is unaffected.
        served = message(cadre, bea, "bea's task")
        assert served.status_code == 200 and served.json()["response"] == "bea done"
    finally:
        held.set()
    wait_for(lambda: not api(cadre, "GET", f"/chats/{running}", ann.key).json()["running"],
             timeout=30, what="ann's first chat to finish")  # fmt: skip
    again = message(cadre, ann, "ann's second")
    assert again.status_code == 200 and again.json()["response"] == "second done"


def test_a_member_over_tokens_per_day_is_refused_and_another_is_served(cadre, fake):
    cid, dan = Member(cadre), Member(cadre)
    limit(cadre, cid, tokens_per_day=1000)
    fake.add_rule(last_user_contains("cid's first"),
                  Reply(answer("first"), usage=(900, 200)))  # fmt: skip
    fake.add_rule(last_user_contains("dan's"), Reply(answer("dan served"), usage=(900, 200)))
    first = message(cadre, cid, "cid's first")
    assert first.status_code == 200 and first.json()["response"] == "first"
    refused = message(cadre, cid, "cid's second")
    assert refused.status_code == 429, refused.text
    words = refused.json()["error"]
    assert "tokens your account may use per day" in words
    assert "The limit resets at midnight UTC, in " in words
    served = message(cadre, dan, "dan's question")
    assert served.status_code == 200 and served.json()["response"] == "dan served"


def test_a_running_chat_stops_at_its_next_step_once_over_the_day(cadre, fake):
    eve = Member(cadre)
    limit(cadre, eve, tokens_per_day=1000)
    # The first step spends past the limit (a call of a tool that does not exist: the loop
    # would go on to a second step); the run stops before that step's model call.
    fake.add_rule(last_user_contains("eve's task"),
                  Reply(reply("no_such_tool", text="x"), usage=(1500, 100)))  # fmt: skip
    stopped = message(cadre, eve, "eve's task")
    assert stopped.status_code == 502, stopped.text
    words = stopped.json()["error"]
    assert words.startswith("You have used 1,600 of the 1,000 tokens")
    chat = api(cadre, "GET", f"/chats/{stopped.json()['context_id']}", eve.key).json()
    errors = [item for item in chat["log"] if item["type"] == "error"]
    assert [item["content"] for item in errors] == [words]
    assert len([r for r in fake.chat_requests() if "eve's task" in str(r.messages)]) == 1


def test_a_member_over_cost_per_day_is_refused_with_the_words(cadre, fake):
    fay = Member(cadre)
    limit(cadre, fay, cost_per_day=0.0001)
    # gpt-4o-mini: 1,000 tokens in and 100 out cost about 0.0002 USD.
    fake.add_rule(last_user_contains("fay's"), Reply(answer("fay served"), usage=(1000, 100)))
    assert message(cadre, fay, "fay's first").json()["response"] == "fay served"
    refused = message(cadre, fay, "fay's second")
    assert refused.status_code == 429
    assert "of the 0.0001 USD your account may spend per day" in refused.json()["error"]


def _upload(member: Member, cadre: ServerProcess, url: str, field: str,
            size: int) -> requests.Response:  # fmt: skip
    token = csrf_token(member.browser, cadre)
    files = {field: ("big.bin", b"x" * size, "application/octet-stream")}
    return member.browser.post(f"{cadre.url}{url}", files=files,
                               headers={"X-CSRF-Token": token}, timeout=60)  # fmt: skip


def test_an_upload_over_the_members_limit_is_a_413_in_plain_words(cadre, fake):
    gus, hal = Member(cadre), Member(cadre)
    limit(cadre, gus, upload_mb=1)
    client, _ = socket_of(gus.browser, cadre)
    try:
        chat_id = ack(client, "chat:new", {})["chat"]["id"]
    finally:
        close_socket(client)
    attach = f"/api/chats/{chat_id}/attachments"
    words = "your account may upload at most 1 MB at a time"
    # An attachment: a little over (read, then refused) and far over (refused unread).
    for size in (MB + MB // 2, 3 * MB):
        refused = _upload(gus, cadre, attach, "file", size)
        assert refused.status_code == 413 and words in refused.json()["error"], refused.text
    assert _upload(gus, cadre, attach, "file", MB // 2).status_code == 200
    # The file panel's upload into their work folder.
    panel = _upload(gus, cadre, "/api/files/upload?root=work&path=", "files", 2 * MB)
    assert panel.status_code == 413 and words in panel.json()["error"]
    # Another member, under the members' default of 50 MB, uploads the same.
    assert _upload(hal, cadre, "/api/files/upload?root=work&path=", "files", 2 * MB).ok
    # A file sent with an A2A task (taken as an attachment): refused the same, no chat made.
    before = chat_ids(cadre, gus)
    state, said = asyncio.run(a2a_with_file(cadre, gus, MB + MB // 2))
    assert state == "TASK_STATE_REJECTED" and words in said, said
    assert chat_ids(cadre, gus) == before


async def a2a_with_file(cadre: ServerProcess, member: Member, size: int) -> tuple[str, str]:
    """An A2A task with a file of `size` bytes, sent with the member's key: its final state
    and status text."""
    parts = [Part(text="Read it."), Part(raw=b"x" * size, filename="big.bin")]
    sent = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts)
    async with httpx.AsyncClient(headers={"X-API-Key": member.key}, timeout=60) as http:
        client = await create_client(cadre.url, ClientConfig(streaming=True, httpx_client=http))
        try:
            events = [e async for e in client.send_message(SendMessageRequest(message=sent))]
        finally:
            await client.close()
    status = events[-1].status_update.status
    return TaskState.Name(status.state), get_message_text(status.message)


def test_usage_is_listed_per_user_for_the_admin_and_each_member_sees_their_own(cadre, fake):
    ivy, jon = Member(cadre), Member(cadre)
    fake.add_rule(last_user_contains("ivy's"), Reply(answer("ivy served"), usage=(300, 30)))
    assert message(cadre, ivy, "ivy's question").status_code == 200
    listed = api(cadre, "GET", "/usage").json()
    assert listed["resets"] == "midnight UTC"
    rows = {row["name"]: row for row in listed["users"]}
    assert {ADMIN, ivy.name, jon.name} <= set(rows)
    # Her answer's call (and the chat's naming): at least its 330 tokens, priced.
    assert rows[ivy.name]["today"]["tokens"] >= 330 and rows[ivy.name]["today"]["cost"] > 0
    assert rows[ivy.name]["last_30_days"]["tokens"] == rows[ivy.name]["today"]["tokens"]
    assert [d["day"] for d in rows[ivy.name]["days"]] == [listed["day"]]
    assert rows[jon.name]["today"]["tokens"] == 0
    assert rows[jon.name]["limits"]["upload_mb"] == MEMBERS_UPLOAD_MB
    # A member: only their own, through the API and the page.
    own = api(cadre, "GET", "/usage", ivy.key).json()["users"]
    assert [row["name"] for row in own] == [ivy.name]
    mine = page(jon.browser, cadre, "GET", "/api/usage").json()["users"]
    assert [row["name"] for row in mine] == [jon.name]
    # Kept on disk behind the runs (written within a second or so).
    ledger = cadre.usr_dir / "usage.json"
    wait_for(lambda: ledger.exists() and ivy.name in ledger.read_text(), timeout=10,
             what="the usage ledger on disk")  # fmt: skip
