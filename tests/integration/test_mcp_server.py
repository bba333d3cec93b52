"""Cadre's MCP server at /mcp, driven by the official SDK's own client against one real
run_ui.py (models on the scripted fake server): initialize, tools, a message and its
continuation, progress, chats, stop, and the refusals (key, no key, host, origin).

The server is the one test modules share (tests/support/shared_desktop.py); its api_key
lives in settings.json (read per request), so one test can turn the MCP server off and on
again.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from werkzeug.serving import make_server

from tests.support import shared_desktop
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import ATTACKER, as_host, live_server, log_text
from tests.support.server_process import ServerProcess
from tests.support.shared_desktop import module_cadre, naming_fake  # noqa: F401 (fixtures)

KEY = shared_desktop.KEY
TOOLS = {"send_message", "list_chats", "get_chat", "stop_chat"}
#: An MCP request as a client's first POST sends it (for the refusals, sent raw).
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "probe", "version": "1"}},
}  # fmt: skip
API = {"X-API-Key": KEY}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def write_key(usr: Path, key: str) -> None:
    """`key` as the api_key in `usr`'s settings.json, the other settings kept; in one step
    (a running server reads the file at every request)."""
    stored = usr / "settings.json"
    settings = json.loads(stored.read_text()) if stored.exists() else {}
    written = stored.with_name("settings.key.json")
    written.write_text(json.dumps({**settings, "api_key": key}))
    written.chmod(0o600)  # as Cadre keeps it: it holds keys
    written.replace(stored)


@asynccontextmanager
async def connect(
    cadre: ServerProcess, mode: str = "auto", **headers: str
) -> AsyncIterator[Client]:
    """The SDK's client on /mcp, sending `headers` (the key as X-API-Key by default)."""
    http = create_mcp_http_client(headers=headers or {"X-API-Key": KEY})
    async with http, Client(streamable_http_client(f"{cadre.url}/mcp", http_client=http),
                            mode=mode) as client:  # fmt: skip
        yield client


def result_of(called) -> dict:
    assert not called.is_error, called.content
    return called.structured_content


async def chat_ids(client: Client) -> set[str]:
    return {chat["id"] for chat in result_of(await client.call_tool("list_chats", {}))["chats"]}


async def running_chat_id(client: Client, before: set[str]) -> str | None:
    """The id of the new chat (none of `before`) that runs, once it does (asked over MCP,
    a bounded number of times: the run starts within a request or two). An older chat
    may still be running out the end of an earlier test's run (the server is shared):
    taking it sent the intervention there, once."""
    for _ in range(300):
        for chat in result_of(await client.call_tool("list_chats", {}))["chats"]:
            if chat.get("running") and chat["id"] not in before:
                return chat["id"]
    return None


async def until(predicate: Callable[[], object], what: str, timeout: float = 30) -> None:
    """Wait (without blocking the test's event loop) until `predicate` holds."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None


async def test_initialize_and_list_tools_with_a_bearer_key(cadre):
    async with connect(cadre, mode="legacy", Authorization=f"Bearer {KEY}") as client:
        assert client.server_info is not None and client.server_info.name == "cadre"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    schema = tools["send_message"].input_schema
    assert schema["required"] == ["message"]
    assert {"message", "chat_id", "profile"} <= schema["properties"].keys()
    assert "Agent 0" in (tools["send_message"].description or "")


async def test_send_message_answers_and_a_second_one_continues_the_chat(cadre, fake):
    fake.script(Reply(answer("Paris.")), Reply(answer("About 2 million.")))
    async with connect(cadre) as client:
        first = result_of(await client.call_tool("send_message", {"message": "Capital of France?"}))
        chat_id = first["chat_id"]
        assert first["answer"] == "Paris."
        again = result_of(await client.call_tool(
            "send_message", {"message": "Population?", "chat_id": chat_id}))  # fmt: skip
        assert again == {"chat_id": chat_id, "answer": "About 2 million."}
        listed = result_of(await client.call_tool("list_chats", {}))["chats"]
        detail = result_of(await client.call_tool("get_chat", {"chat_id": chat_id}))
    assert chat_id in [c["id"] for c in listed]
    assert detail["last_answer"] == "About 2 million." and detail["running"] is False
    assert [a["profile"] for a in detail["agents"]] == ["agent0"]
    # The chat is the one the UI and the HTTP API show.
    api = requests.get(f"{cadre.url}/api/v1/chats/{chat_id}", headers=API, timeout=10)
    assert [i["type"] for i in api.json()["log"]].count("response") == 2


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_notifications_tell_each_step_before_the_answer(cadre, fake, mode):
    fake.script(
        Reply(reply("call_subordinate", headline="Delegating the search",
                    message="Find X.", profile="researcher", reset=True)),
        Reply(reply("response", headline="Reporting back", text="X found.")),
        Reply(answer("Here: X found.")),
    )  # fmt: skip
    heard: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, message))

    async with connect(cadre, mode) as client:
        called = await client.call_tool(
            "send_message", {"message": "Find X."}, progress_callback=on_progress
        )
    assert result_of(called)["answer"] == "Here: X found."
    lines = [message for _, message in heard]
    # Each step once its heading is final; Agent 0's last steps may come after the answer.
    assert lines[:4] == [
        "A0: Delegating the search", "A0: Calling subordinate agent",
        "A1: Reporting back", "A1: Responding",
    ], lines  # fmt: skip
    assert [p for p, _ in heard] == list(range(1, len(heard) + 1))


async def test_bad_calls_are_tool_errors_in_words(cadre, fake):
    async with connect(cadre) as client:
        cases = {
            "no chat with id 'nope'": {"message": "x", "chat_id": "nope"},
            "no available agent profile 'ghost'": {"message": "x", "profile": "ghost"},
            "profile applies only when the call starts a new chat": {
                "message": "x", "chat_id": "abc", "profile": "researcher"},
        }  # fmt: skip
        for words, arguments in cases.items():
            called = await client.call_tool("send_message", arguments)
            assert called.is_error and words in called.content[0].text, called.content
        missing = await client.call_tool("get_chat", {"chat_id": "nope"})
        assert missing.is_error and "no chat with id 'nope'" in missing.content[0].text
        invalid = await client.call_tool("send_message", {"message": ""})
        assert invalid.is_error and "message" in invalid.content[0].text
    # No run started (a chat named late by the test before may still ask the util model).
    assert fake.chat_requests("chat-model") == []


async def test_a_message_to_a_running_chat_is_an_intervention(cadre, fake):
    fake.script(Reply(answer("slow " * 400), chunk_size=4, delay=0.05), Reply(answer("changed")))
    async with connect(cadre) as client:
        before = await chat_ids(client)
        first = asyncio.create_task(client.call_tool("send_message", {"message": "Go slowly."}))
        chat_id = await running_chat_id(client, before)
        assert chat_id, "the run never showed as running"
        # Sent while the slow reply streams: sent before the model was called, the message
        # is read in that first call, which the slow reply answers (seen once in a full run).
        await until(lambda: fake.chat_requests("chat-model"), "the slow call")
        second = result_of(await client.call_tool(
            "send_message", {"message": "Shorter, please.", "chat_id": chat_id}))  # fmt: skip
        # Both waited for the same run: the one the intervention changed.
        assert second == {"chat_id": chat_id, "answer": "changed"}
        assert result_of(await asyncio.wait_for(first, 30)) == second
    sent = fake.chat_requests("chat-model")[-1]
    assert any("Shorter, please." in str(m.get("content")) for m in sent.body["messages"])


async def test_stop_chat_ends_a_run_and_its_wait(cadre, fake):
    fake.script(Reply(answer("slow " * 400), chunk_size=4, delay=0.05))
    async with connect(cadre) as client:
        before = await chat_ids(client)
        sending = asyncio.create_task(client.call_tool("send_message", {"message": "Go slowly."}))
        chat_id = await running_chat_id(client, before)
        assert chat_id, "the run never showed as running"
        assert result_of(await client.call_tool("stop_chat", {"chat_id": chat_id})) == {
            "stopped": True
        }
        called = await asyncio.wait_for(sending, 30)
        detail = result_of(await client.call_tool("get_chat", {"chat_id": chat_id}))
    assert called.is_error and "the run was stopped" in called.content[0].text
    assert detail["running"] is False


@pytest.fixture
def in_process(server, monkeypatch) -> Iterator[str]:
    """The app of the integration `server` fixture on a real socket in this process (so a
    test can look at the MCP loop's tasks); its URL."""
    monkeypatch.setenv("CADRE_API_KEY", KEY)
    web = make_server("127.0.0.1", 0, server.app, threaded=True)
    thread = threading.Thread(target=web.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{web.server_port}"
    web.shutdown()
    thread.join(10)


def mcp_tasks(server) -> int:
    """How many tasks run on the MCP server's loop now."""
    loop = server.mcp._mount._served.loop

    async def count() -> int:
        return len(asyncio.all_tasks()) - 1  # not this one

    return asyncio.run_coroutine_threadsafe(count(), loop).result(10)


async def test_a_client_that_hangs_up_leaves_no_task_behind(server, in_process, llm):
    gate = threading.Event()
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    llm.script(
        Reply(reply("call_subordinate", message="Find X.", profile="researcher", reset=True)),
        Reply(answer("X found."), gate=gate),
        Reply(answer("Here: X found.")),
    )  # fmt: skip
    heard = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.set()

    http = create_mcp_http_client(headers=API)
    async with http, Client(streamable_http_client(f"{in_process}/mcp", http_client=http),
                            mode="legacy") as client:  # fmt: skip
        await client.list_tools()
        idle = mcp_tasks(server)
        sending = asyncio.create_task(client.call_tool(
            "send_message", {"message": "Find X."}, progress_callback=on_progress))  # fmt: skip
        await asyncio.wait_for(heard.wait(), 30)
        assert mcp_tasks(server) > idle
        sending.cancel()  # hangs up: the stream's connection is closed
    gate.set()  # the run goes on; its next write finds the connection gone
    chat = server.app.extensions["cadre.chats"].registry.all()[0]
    await until(lambda: not chat.running, "the run to end")
    await until(lambda: mcp_tasks(server) <= idle, "the request's tasks to end", timeout=10)


async def test_cadre_stops_cleanly_while_an_mcp_call_waits(tmp_path, _fake_llm_server):
    fake = _fake_llm_server
    fake.reset()
    fake.add_rule(model_is("util-model"), Reply("A chat"))
    gate = threading.Event()
    fake.script(Reply(answer("never heard"), gate=gate))
    (tmp_path / "cadre" / "usr").mkdir(parents=True)
    write_key(tmp_path / "cadre" / "usr", KEY)
    cadre = live_server(tmp_path / "cadre", fake.base_url)
    try:
        with pytest.raises((ExceptionGroup, MCPError)):  # the connection is gone
            async with connect(cadre) as client:
                sending = asyncio.create_task(client.call_tool("send_message", {"message": "W"}))
                await until(lambda: fake.chat_requests(), "the model call")
                await asyncio.to_thread(cadre.stop)  # SIGTERM, as a service manager stops it
                await asyncio.wait_for(sending, 30)
    finally:
        gate.set()
        # Its own stop's end, waited for: gunicorn's arbiter ends a moment after its worker
        # (which closed the connection the client saw cut).
        cadre.stop()
    assert cadre.process.returncode == 0
    text = log_text(cadre)
    assert "cadre: stopped" in text and "Traceback" not in text, text[-3000:]


@pytest.mark.parametrize(
    "headers",
    [{}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}],
)
def test_a_missing_or_wrong_key_gets_401(cadre, headers):
    response = requests.post(f"{cadre.url}/mcp", json=INITIALIZE, headers={**ACCEPT, **headers},
                             timeout=10)  # fmt: skip
    assert response.status_code == 401
    assert "missing or wrong API key" in response.json()["error"]["message"]


async def test_the_sdk_client_is_refused_with_a_wrong_key(cadre):
    with pytest.raises(ExceptionGroup) as refused:  # the MCPError, out of the client's tasks
        async with connect(cadre, mode="legacy", **{"X-API-Key": "wrong"}) as client:
            await client.list_tools()
    assert "missing or wrong API key" in repr(refused.value)


def test_no_key_configured_turns_the_mcp_server_off(cadre):
    write_key(cadre.usr_dir, "")
    try:
        response = requests.post(f"{cadre.url}/mcp", json=INITIALIZE,
                                 headers={**ACCEPT, "X-API-Key": ""}, timeout=10)  # fmt: skip
        assert response.status_code == 403
        assert "MCP server is disabled" in response.json()["error"]["message"]
    finally:
        write_key(cadre.usr_dir, KEY)
    working = requests.post(f"{cadre.url}/mcp", json=INITIALIZE,
                            headers={**ACCEPT, "X-API-Key": KEY}, timeout=10)  # fmt: skip
    assert working.status_code == 200


def test_a_hostile_host_or_origin_is_refused(cadre):
    hostile = {**ACCEPT, **as_host(cadre, ATTACKER), **API}
    rebound = requests.post(f"{cadre.url}/mcp", json=INITIALIZE, timeout=10, headers=hostile)
    assert rebound.status_code == 421 and ATTACKER in rebound.json()["error"]
    foreign = requests.post(f"{cadre.url}/mcp", json=INITIALIZE, timeout=10, headers={
        **ACCEPT, "Origin": "http://127.0.0.1:1", "X-API-Key": KEY})  # fmt: skip
    assert foreign.status_code == 403 and "origin" in foreign.json()["error"]["message"]
