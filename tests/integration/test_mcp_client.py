"""The MCP client end to end: real MCP servers (the SDK's own server side), the agent loop
with the scripted model, the status routes.

One local (stdio) and one remote (streamable HTTP) server serve the whole module;
the tests that change or kill them come last and leave them as they found them.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.agent_types import UserMessage
from core.prompt import system_prompt
from core.reply import reply_schema
from helpers.runtime import AgentRuntime
from mcp_client.status import ServerStatus
from mcp_client.supervisor import McpSupervisor
from tests.support.agents import answer, history_text, make_profile, reply, wait_for
from tests.support.fake_llm import Reply
from tests.support.mcp_servers import (
    HttpMcpServer,
    alive,
    kill,
    read_pid,
    servers_text,
    stdio_entry,
)

#: Seconds a test waits for a server to (re)start: generous, the CPU is shared.
START = 60.0


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp")


@pytest.fixture(scope="module")
def remote(folder: Path) -> Iterator[HttpMcpServer]:
    server = HttpMcpServer(folder).wait_ready()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def config(folder: Path, remote: HttpMcpServer) -> str:
    return servers_text(local=stdio_entry(folder / "local.pid"), remote={"url": remote.url})


def mcp(runtime: AgentRuntime) -> McpSupervisor:
    """The supervisor the module's runtime holds."""
    supervisor = runtime.service(McpSupervisor)
    assert supervisor is not None
    return supervisor


def ready(supervisor: McpSupervisor, *names: str) -> bool:
    states = {s.name: s.state for s in supervisor.statuses()}
    return all(states.get(name) == "ready" for name in names)


@pytest.fixture(scope="module")
def runtime(config: str, folder: Path) -> Iterator[AgentRuntime]:
    """The agents' loop with an MCP client connected to both test servers (replaces the
    per-test runtime: the servers start once for the module)."""
    rt = AgentRuntime().start()
    supervisor = rt.provide(McpSupervisor(rt))
    supervisor.apply(config)
    wait_for(lambda: ready(supervisor, "local", "remote"), START, "both MCP servers")
    yield rt
    pid = read_pid(folder / "local.pid")
    supervisor.stop()
    rt.stop()
    assert not alive(pid), "the local MCP server outlived its supervisor"


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CADRE_MCP_TOOL_TIMEOUT", "1")


def last_tool_result(llm) -> str:
    return llm.chat_requests()[-1].messages[-1]["content"]


def mcp_items(context) -> list:
    return [item for item in context.log.items if item.type == "mcp_tool"]


def test_the_model_sees_the_tools_calls_one_and_gets_its_result(make_context, llm):
    llm.script(
        Reply(reply("local.add", a=2, b=3)),
        Reply(reply("remote.add", a=40, b=2)),
        Reply(answer("5 and 42")),
    )
    context = make_context()
    assert context.communicate(UserMessage("Add.")).result(60) == "5 and 42"
    first, second, third = llm.chat_requests()
    system = first.messages[0]["content"]
    # Each tool on a line at first; its whole section once the agent has called it.
    for server in ("local", "remote"):
        assert f"- `{server}.add(a, b)`: Add two integers." in system
    assert "reason?" in system and 'reason?: string = "broken"' not in system
    assert (
        "### local.add\nAdd two integers.\nArguments: a: integer, b: integer"
        in (second.messages[0]["content"])
    )
    assert "### remote.add" not in second.messages[0]["content"]
    assert "### remote.add" in third.messages[0]["content"]
    # A server's answer is text from outside: marked as data from that server.
    for request, server, result in ((second, "local", "5"), (third, "remote", "42")):
        said = request.messages[-1]["content"]
        opening = f'tool="{server}.add" source="{server}">'
        [block] = re.findall(r'<untrusted-data id="([0-9a-f]{12})" ' + re.escape(opening), said)
        assert said.startswith(f"[Result of tool `{server}.add`]\n<untrusted-data id=")
        assert f'source="{server}">\n{result}\n</untrusted-data id="{block}">' in said
    local, remote = mcp_items(context)
    assert (local.heading, local.kvps, local.content) == ("local.add", {"a": 2, "b": 3}, "5")
    assert (remote.heading, remote.content) == ("remote.add", "42")


def test_an_mcp_tools_manual_is_given_when_asked_for(make_context, llm):
    asking = json.dumps({"thoughts": ["I need its arguments."], "headline": "Reading",
                         "tool_name": "manual", "tool_args": {"tool": "local.add"}})  # fmt: skip
    llm.script(Reply(asking), Reply(answer("read")))
    context = make_context()
    assert context.communicate(UserMessage("How do I add?")).result(60) == "read"
    _, after = llm.chat_requests()
    section = "### local.add\nAdd two integers.\nArguments: a: integer, b: integer"
    assert after.messages[-1]["content"].startswith(f"[Result of tool `manual`]\n{section}")
    assert section in after.messages[0]["content"]  # in the prompt from then on


def test_a_bad_argument_gets_a_repairable_message(make_context, llm):
    llm.script(
        Reply(reply("local.add", a="two", b=3)),
        Reply(reply("local.add", a=2, b=3)),
        Reply(answer("5")),
    )
    context = make_context()
    assert context.communicate(UserMessage("Add.")).result(60) == "5"
    warning = llm.chat_requests()[1].messages[-1]["content"]
    assert "Invalid arguments for tool 'local.add'" in warning
    assert "a: 'two' is not of type 'integer'" in warning
    assert "Its arguments: a: integer, b: integer" in warning
    assert [item.content for item in mcp_items(context)] == ["5"]  # the bad call never ran


def test_a_server_error_goes_back_to_the_model(make_context, llm):
    llm.script(Reply(reply("remote.fail", reason="disk full")), Reply(answer("It failed.")))
    context = make_context()
    assert context.communicate(UserMessage("Try.")).result(60) == "It failed."
    warning = last_tool_result(llm)
    assert "Tool 'remote.fail' returned an error" in warning and "disk full" in warning
    # The server's error text is its own words: marked as data too, around "disk full".
    opening = warning.index('<untrusted-data id="')
    assert 'tool="remote.fail" source="remote"' in warning
    assert opening < warning.index("disk full") < warning.index("</untrusted-data id=")
    assert mcp_items(context)[0].kvps["status"] == "error"
    # The page's log shows the error as the server said it: the marking is the model's.
    shown = [str(item.model_dump()) for item in context.log.items]
    shown = [text for text in shown if "disk full" in text]
    assert shown and not [text for text in shown if "untrusted-data" in text]


def test_a_hanging_call_is_cut_at_the_timeout_and_the_server_goes_on(make_context, llm, fast):
    llm.script(
        Reply(reply("local.hang")),
        Reply(reply("local.add", a=1, b=1)),
        Reply(answer("2")),
    )
    context = make_context()
    assert context.communicate(UserMessage("Wait.")).result(60) == "2"
    requests = llm.chat_requests()
    assert "gave no answer within 1 seconds" in requests[1].messages[-1]["content"]
    assert mcp_items(context)[-1].content == "2"


def test_images_and_resources_are_saved_in_the_chat_and_listed(make_context, llm, usr_dir):
    llm.script(Reply(reply("remote.image")), Reply(reply("local.resource")), Reply(answer("ok")))
    context = make_context()
    assert context.communicate(UserMessage("Show me.")).result(60) == "ok"
    image, resource = mcp_items(context)
    [url] = image.kvps["images"]
    prefix = f"/api/chats/{context.id}/files/"
    assert url.startswith(prefix + "mcp/") and url.endswith(".png")
    saved = usr_dir / "chats" / context.id / url.removeprefix(prefix)
    assert saved.read_bytes().startswith(b"\x89PNG")
    assert f"saved as {url.removeprefix(prefix)}" in llm.chat_requests()[1].messages[-1]["content"]
    [file_url] = resource.kvps["files"]
    assert (usr_dir / "chats" / context.id / file_url.removeprefix(prefix)).read_text() == "notes"


def test_secrets_reach_the_server_but_not_the_log(make_context, llm, monkeypatch):
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"TOKEN": "s3cr3t-value"}))
    llm.script(Reply(reply("local.echo_secret", token="§§secret(TOKEN)")), Reply(answer("in")))
    context = make_context()
    assert context.communicate(UserMessage("Log in.")).result(60) == "in"
    [item] = mcp_items(context)
    assert item.kvps["token"] == "§§secret(TOKEN)" and item.content == "token accepted"
    saved = json.dumps(context.log.to_list()) + history_text(context.agent0)
    assert "s3cr3t-value" not in saved


def test_a_long_result_is_saved_for_include(make_context, llm, usr_dir):
    llm.script(Reply(reply("local.long_text", lines=60)), Reply(answer("read")))
    context = make_context()
    assert context.communicate(UserMessage("Read.")).result(60) == "read"
    saved = usr_dir / "chats" / context.id / "messages" / "1.txt"
    # Saved as history has it, marked: an include of the file carries the marking along.
    text = saved.read_text()
    assert re.match(r'<untrusted-data id="[0-9a-f]{12}" tool="local.long_text" source="local">\n'
                    "Line 0: something the tool found.", text)  # fmt: skip
    assert text.rstrip().endswith('">') and "</untrusted-data id=" in text
    assert "messages/1.txt" in last_tool_result(llm)


def test_a_profile_may_limit_the_servers(make_context, runtime, usr_dir):
    make_profile(usr_dir, "limited", yaml="title: limited\nmcp_servers: [remote]\n")
    context = make_context(agent_profile="limited")
    tools = runtime.call(context.agent0.available_tools)
    assert "remote.add" in tools and not any(name.startswith("local.") for name in tools)
    everything = runtime.call(make_context().agent0.available_tools)
    assert "local.add" in everything and "remote.image" in everything


def test_the_tools_are_in_the_reply_schema(make_context, runtime):
    agent = make_context().agent0
    precise = runtime.submit(asyncio.to_thread(reply_schema.for_agent, agent, True)).result(30)
    variants = {v["properties"]["tool_name"]["const"]: v for v in precise["anyOf"]}
    add = variants["local.add"]["properties"]["tool_args"]
    assert add["properties"] == {"a": {"title": "A", "type": "integer"},
                                 "b": {"title": "B", "type": "integer"}}  # fmt: skip
    assert add["required"] == ["a", "b"] and "remote.image" in variants
    assert "response" in variants  # Cadre's own tools stay
    loose = runtime.submit(asyncio.to_thread(reply_schema.for_agent, agent, False)).result(30)
    assert {"local.add", "remote.hang", "response"} <= set(
        loose["properties"]["tool_name"]["enum"])  # fmt: skip


def test_the_prompt_follows_the_servers_and_only_changed_servers_restart(
    make_context, runtime, config, folder
):
    agent = make_context().agent0

    def prompt() -> str:
        return runtime.submit(system_prompt.build_system_prompt(agent)).result(30)

    assert "`remote.add(a, b)`" in prompt()
    remote_before = mcp(runtime).connections["remote"]
    local_pid = read_pid(folder / "local.pid")
    entries = json.loads(config)["mcpServers"]
    mcp(runtime).apply(servers_text(local=entries["local"]))
    text = prompt()  # the cached prompt is not reused: its tools changed
    assert "`remote.add(a, b)`" not in text and "`local.add(a, b)`" in text
    assert read_pid(folder / "local.pid") == local_pid and alive(local_pid)  # left alone
    mcp(runtime).apply(config)
    wait_for(lambda: ready(mcp(runtime), "remote"), START, "the remote server back")
    assert mcp(runtime).connections["remote"] is not remote_before
    assert "`remote.add(a, b)`" in prompt()


def test_a_server_that_cannot_start_is_failed_with_its_error_and_stderr(
    runtime, config, http, monkeypatch
):
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"TOKEN": "tok-12345"}))
    crash = "import sys; sys.stderr.write('missing API token tok-12345\\n'); sys.exit(3)"
    entries = json.loads(config)["mcpServers"]
    broken = {"command": sys.executable, "args": ["-c", crash]}
    mcp(runtime).apply(servers_text(**entries, broken=broken))
    try:

        def failed_again() -> ServerStatus | None:
            found = [s for s in mcp(runtime).statuses() if s.name == "broken"]
            return found[0] if found[0].state == "failed" and found[0].restarts >= 1 else None

        status = wait_for(failed_again, START, "the broken server failing twice")
        assert status.error and "missing API token" in status.stderr_tail
        assert not [t for t in mcp(runtime).tools() if t.server == "broken"]

        def shown_failed() -> dict | None:  # as the page sees it, with the secret masked
            listed = http.get("/api/mcp/servers").json["servers"]
            [shown] = [s for s in listed if s["name"] == "broken"]
            return shown if shown["state"] == "failed" else None

        assert "missing API token ***" in wait_for(shown_failed, START, "failed")["stderr_tail"]
    finally:
        mcp(runtime).apply(config)
    assert [s.name for s in mcp(runtime).statuses()] == ["local", "remote"]


def test_an_sse_only_server_is_reached_through_the_fallback(make_context, llm, runtime, config,
                                                            folder):  # fmt: skip
    legacy = HttpMcpServer(folder, "sse").wait_ready()
    try:
        entries = json.loads(config)["mcpServers"]
        mcp(runtime).apply(servers_text(**entries, legacy={"url": legacy.url}))
        wait_for(lambda: ready(mcp(runtime), "legacy"), START, "the SSE server")
        [status] = [s for s in mcp(runtime).statuses() if s.name == "legacy"]
        assert status.transport == "sse" and status.error is None
        llm.script(Reply(reply("legacy.add", a=20, b=22)), Reply(answer("42")))
        context = make_context()
        assert context.communicate(UserMessage("Add.")).result(60) == "42"
        assert mcp_items(context)[0].content == "42"
    finally:
        mcp(runtime).apply(config)
        legacy.stop()


def test_a_remote_server_at_a_refused_address_fails_with_the_reason(runtime, config, remote,
                                                                   monkeypatch):  # fmt: skip
    monkeypatch.setenv("CADRE_OUTBOUND_PRIVATE", "refuse")  # helpers/outbound.py
    entries = json.loads(config)["mcpServers"]
    try:
        mcp(runtime).apply(servers_text(**entries, walled={"url": remote.url}))

        def failed() -> ServerStatus | None:
            found = [s for s in mcp(runtime).statuses() if s.name == "walled"]
            return found[0] if found and found[0].state == "failed" else None

        status = wait_for(failed, START, "the refusal")
        assert "127.0.0.1, a local or private address: refused by the setting" in status.error
        assert ready(mcp(runtime), "remote")  # connected before: untouched
    finally:
        mcp(runtime).apply(config)


def test_a_killed_local_server_is_started_again(make_context, llm, runtime, folder):
    pid = read_pid(folder / "local.pid")
    before = mcp(runtime).connections["local"].restarts
    kill(pid)
    wait_for(lambda: mcp(runtime).connections["local"].restarts > before, START, "a restart")
    wait_for(lambda: ready(mcp(runtime), "local"), START, "the local server back")
    assert read_pid(folder / "local.pid") != pid
    llm.script(Reply(reply("local.add", a=1, b=2)), Reply(answer("3")))
    context = make_context()
    assert context.communicate(UserMessage("Add.")).result(60) == "3"


def test_the_status_routes_and_a_saved_setting(server, http, runtime, config, folder):
    listed = http.get("/api/mcp/servers").json["servers"]
    assert [(s["name"], s["transport"], s["state"]) for s in listed] == [
        ("local", "stdio", "ready"), ("remote", "streamable-http", "ready")]  # fmt: skip
    local = listed[0]
    assert local["error"] is None and "test MCP server starting" in local["stderr_tail"]
    assert {"name": "local.add", "description": "Add two integers."} in local["tools"]
    assert listed[1]["stderr_tail"] == ""

    assert http.post("/api/mcp/validate", json={"text": config}).json == {
        "ok": True, "error": None, "servers": ["local", "remote"]}  # fmt: skip
    bad = '{"mcpServers": {"x": {"url": "ftp://host"}}}'
    checked = http.post("/api/mcp/validate", json={"text": bad}).json
    assert checked == {"ok": False, "servers": [],
                       "error": "server 'x': url: must start with http:// or https://"}  # fmt: skip
    refused = http.post("/api/settings", json={"mcp_servers": bad})
    assert refused.status_code == 400
    assert refused.json["error"] == f"mcp_servers: {checked['error']}"

    before = dict(mcp(runtime).connections)
    entries = json.loads(config)["mcpServers"]
    more = servers_text(**entries, spare={"command": "nothing-to-run", "disabled": True})
    assert http.post("/api/settings", json={"mcp_servers": more}).status_code == 200
    listed = http.get("/api/mcp/servers").json["servers"]
    assert [(s["name"], s["state"]) for s in listed][2] == ("spare", "disabled")
    assert all(mcp(runtime).connections[name] is before[name] for name in before)  # untouched

    assert http.post("/api/mcp/servers/nope/restart").status_code == 404
    assert http.post("/api/mcp/servers/remote/restart").json == {"restarted": True}
    wait_for(lambda: ready(mcp(runtime), "remote"), START, "the remote server back")
    assert mcp(runtime).connections["remote"].restarts == before["remote"].restarts + 1


def test_a_saved_image_is_served_to_the_page(server, http, usr_dir):
    context = server.app.extensions["cadre.chats"].new_chat()
    folder = usr_dir / "chats" / context.id / "mcp"
    folder.mkdir(parents=True)
    (folder / "ab12-image.png").write_bytes(b"\x89PNG data")
    answer_ = http.get(f"/api/chats/{context.id}/files/mcp/ab12-image.png")
    assert answer_.status_code == 200 and answer_.data == b"\x89PNG data"
    assert http.get(f"/api/chats/{context.id}/files/mcp/..%2Fchat.json").status_code == 404
    assert http.get("/api/chats/nochat/files/mcp/ab12-image.png").status_code == 404
