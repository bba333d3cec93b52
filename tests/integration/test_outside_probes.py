"""The outside-facing surfaces probed as an attacker and as a clumsy client would.

One real run_ui.py (the one test modules share, its models on the scripted fake
server), raw HTTP through `requests`, so that headers, bodies and framing are exactly
what a hostile or sloppy client sends: `/mcp` (the MCP server), `/v1` (the
OpenAI-compatible endpoint), the route that serves the files MCP tools
returned and the `mcp_servers` setting; and a hostile MCP server's tool list.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from helpers.mcp_config import StdioServer
from helpers.secrets import SecretMasker
from mcp_client.connection import ServerConnection
from mcp_client.tools import DESCRIPTION_LIMIT, TOOLS_LIMIT, arguments_text, short
from mcp_client.validation import argument_problems
from server.routes.mcp_servers import status_view
from tests.support import shared_desktop
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import (
    ATTACKER,
    ack,
    close_socket,
    csrf_token,
    open_socket,
)
from tests.support.server_process import ServerProcess

KEY = shared_desktop.KEY
#: Both endpoints take bodies up to 4 MB (the SDK's own limit for /mcp).
OVER_LIMIT = 4 * 1024 * 1024 + 1
MCP_HEADERS = {
    "X-API-Key": KEY,
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
V1_HEADERS = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
)


@pytest.fixture(scope="module")
def shared(desktop_server) -> Iterator[ServerProcess]:
    """The run_ui.py test modules share (tests/support/shared_desktop.py)."""
    with shared_desktop.for_module(desktop_server) as server:
        yield server


def chunked(data: bytes, size: int = 65536) -> Iterator[bytes]:
    """`data` as a generator: requests sends it chunked, with no Content-Length."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def post(url: str, body: object, headers: dict[str, str]) -> requests.Response:
    return requests.post(url, data=body, headers=headers, timeout=60)


# -- /mcp ------------------------------------------------------------------------------


def test_mcp_reads_a_chunked_body(shared):
    answer = post(f"{shared.url}/mcp", chunked(INITIALIZE), MCP_HEADERS)
    assert answer.status_code == 200, answer.text
    assert '"result"' in answer.text and "Cadre" in answer.text


def test_a_get_of_mcp_is_told_to_post_not_left_hanging(shared):
    """A stateless server has no stream to push on: a GET (a clumsy client, or one
    opening the optional SSE stream) is a 405 at once, not a response that never starts."""
    answer = requests.get(f"{shared.url}/mcp", headers={"X-API-Key": KEY,
                          "Accept": "text/event-stream"}, timeout=20)  # fmt: skip
    assert answer.status_code == 405
    assert "POST" in answer.headers["Allow"] and "POST" in answer.json()["error"]["message"]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_mcp_refuses_an_oversized_body_as_a_json_rpc_error(shared, framing):
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * OVER_LIMIT + b'"}}'
    answer = post(f"{shared.url}/mcp", big if framing == "content-length" else chunked(big),
                  MCP_HEADERS)  # fmt: skip
    assert answer.status_code == 413
    assert "4 MB" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-API-Key": ""},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {KEY}"},
        {"X-API-Key": KEY + "x"},
        {"X-API-Key": KEY[:-1]},
        {"X-API-Key": KEY.replace("e", "\u00e9", 1).encode().decode("latin-1")},  # a near miss
    ],
)
def test_mcp_and_v1_refuse_missing_and_wrong_keys(shared, headers):
    accept = {"Accept": MCP_HEADERS["Accept"], "Content-Type": "application/json"}
    mcp = post(f"{shared.url}/mcp", INITIALIZE, {**accept, **headers})
    assert mcp.status_code == 401 and "API key" in mcp.json()["error"]["message"]
    v1 = requests.get(f"{shared.url}/v1/models", headers=headers, timeout=30)
    assert v1.status_code == 401 and v1.json()["error"]["code"] == "invalid_api_key"


def test_a_foreign_host_or_origin_is_refused(shared):
    host = {"Host": f"{ATTACKER}:{shared.port}"}
    assert post(f"{shared.url}/mcp", INITIALIZE, {**MCP_HEADERS, **host}).status_code == 421
    v1 = requests.get(f"{shared.url}/v1/models", headers={"Authorization": f"Bearer {KEY}", **host},
                      timeout=30)  # fmt: skip
    assert v1.status_code == 421
    origin = {"Origin": f"http://{ATTACKER}"}
    assert post(f"{shared.url}/mcp", INITIALIZE, {**MCP_HEADERS, **origin}).status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x\xff"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800"}}',
        b'{"jsonrpc":"1.0","id":{"a":1},"method":7}',
        b"[]",
        b"",
    ],
    ids=["nested", "bad-utf8", "lone-surrogate", "wrong-shape", "empty-batch", "empty"],
)
def test_mcp_answers_bad_json_rpc_with_an_error_and_keeps_serving(shared, body):
    answer = post(f"{shared.url}/mcp", body, MCP_HEADERS)
    assert 400 <= answer.status_code < 500 or '"error"' in answer.text, answer.text
    assert post(f"{shared.url}/mcp", INITIALIZE, MCP_HEADERS).status_code == 200


# -- /v1 --------------------------------------------------------------------------------


def test_v1_refuses_an_oversized_chunked_body_with_413(shared):
    big = b'{"model":"cadre","messages":[{"role":"user","content":"' + b"a" * OVER_LIMIT + b'"}]}'
    answer = post(f"{shared.url}/v1/chat/completions", chunked(big), V1_HEADERS)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"model":"cadre","messages":[{"role":"user","content":"a\xffb"}]}',
        b'{"model":"cadre","messages":[{"role":"user","content":"a\\udfffb"}]}',
        b'{"model":"cadre","messages":[{"role":"hacker","content":"x"}]}',
        b'{"model":"cadre","messages":[]}',
        b'{"model":["cadre"],"messages":"hi"}',
    ],
    ids=["nested", "bad-utf8", "lone-surrogate", "bad-role", "no-messages", "wrong-types"],
)
def test_v1_answers_a_bad_body_with_a_400_in_the_openai_shape(shared, body):
    answer = post(f"{shared.url}/v1/chat/completions", body, V1_HEADERS)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "invalid_request_error"


def half_closed(server: ServerProcess) -> int:
    """The server's connections its client closed but it still holds (TCP CLOSE_WAIT):
    a request whose thread still works on a client that hung up."""
    port = f"{server.port:04X}"
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            count += local.endswith(f":{port}") and state == "08"
    return count


def chat_ids(server: ServerProcess) -> set[str]:
    answer = requests.get(f"{server.url}/api/v1/chats", headers={"X-API-Key": KEY}, timeout=30)
    return {chat["id"] for chat in answer.json()["chats"]}


def test_a_client_hanging_up_mid_stream_leaves_the_run_and_no_thread(shared, llm):
    """The stream's client goes away while Agent 0 works: the run still ends with its
    answer in the chat, the request lets its connection go, and the endpoint keeps
    answering."""
    llm.add_rule(model_is("util-model"), Reply("Named"))
    # One whole run first (the server's first model call is slow on a busy machine).
    llm.script(Reply(answer("Warm.")))
    warm = {"model": "cadre", "messages": [{"role": "user", "content": "warm up"}]}
    assert post(f"{shared.url}/v1/chat/completions", json.dumps(warm), V1_HEADERS).ok
    gate = threading.Event()
    llm.script(Reply(answer("Finished anyway."), gate=gate))
    before = chat_ids(shared)
    body = {"model": "cadre", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    stream = requests.post(f"{shared.url}/v1/chat/completions", json=body, headers=V1_HEADERS,
                           stream=True, timeout=60)  # fmt: skip
    assert next(stream.iter_lines()).startswith(b"data: ")
    stream.close()  # hang up while the model has not answered
    # The request holds the connection while the run works (what is checked below).
    wait_for(lambda: half_closed(shared) == 1, 30, "the hung-up connection")
    gate.set()
    (chat,) = wait_for(lambda: chat_ids(shared) - before, 60, "the stream's chat")
    detail = f"{shared.url}/api/v1/chats/{chat}"

    def answered() -> bool:
        return (
            "Finished anyway." in requests.get(detail, headers={"X-API-Key": KEY}, timeout=30).text
        )

    wait_for(answered, 60, "the answer")
    wait_for(lambda: half_closed(shared) == 0, 60, "the stream's request to let go")
    models = requests.get(f"{shared.url}/v1/models", headers=V1_HEADERS, timeout=30)
    assert models.status_code == 200


# -- the files MCP tools returned -----------------------------------------------------------


@pytest.fixture(scope="module")
def chat_folder(shared) -> tuple[str, Path]:
    """A chat of the shared server and its `mcp/` folder (where MCP results are saved)."""
    socket = open_socket(shared, {})
    try:
        chat_id = ack(socket, "chat:new")["chat"]["id"]
    finally:
        close_socket(socket)
    folder = Path(shared.env["CADRE_USR_DIR"]) / "chats" / chat_id / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    return chat_id, folder


def test_a_saved_mcp_file_is_never_a_page_of_cadre(shared, chat_folder):
    """A hostile server's "image" of type text/html (saved as .html) must not run as a page
    on Cadre's origin: it is a download, sandboxed; a real image still shows inline."""
    chat_id, folder = chat_folder
    (folder / "0a1b2c3d-image.html").write_text("<script>fetch('/api/settings')</script>")
    (folder / "0a1b2c3d-image.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg">'
                                               "<script>alert(1)</script></svg>")  # fmt: skip
    (folder / "0a1b2c3d-image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    base = f"{shared.url}/api/chats/{chat_id}/files/mcp"
    for name in ("0a1b2c3d-image.html", "0a1b2c3d-image.svg"):
        page = requests.get(f"{base}/{name}", timeout=30)
        assert page.status_code == 200
        assert page.headers["Content-Disposition"].startswith("attachment")
        assert "sandbox" in page.headers["Content-Security-Policy"]
    image = requests.get(f"{base}/0a1b2c3d-image.png", timeout=30)
    assert image.headers["Content-Type"] == "image/png"
    assert "attachment" not in image.headers.get("Content-Disposition", "")


@pytest.mark.parametrize(
    "name",
    ["..%2Fchat.json", "..%2F..%2F..%2Fsettings.json", "%2Fetc%2Fpasswd", "a%00b", "x" * 5000],
)
def test_the_mcp_file_route_refuses_names_leaving_the_folder(shared, chat_folder, name):
    chat_id, _ = chat_folder
    answer = requests.get(f"{shared.url}/api/chats/{chat_id}/files/mcp/{name}", timeout=30)
    assert answer.status_code in (400, 404)
    assert "chat" not in answer.text.lower() or answer.headers["Content-Type"].startswith(
        "application/json"
    )


# -- a hostile MCP server's tool list ----------------------------------------------------------


async def test_a_hostile_servers_tools_keep_the_prompt_bounded(usr_dir):
    """Endless pages of tools, names that would break the prompt's layout, a megabyte of
    description, thousands of huge arguments, a schema that refers to itself: the server
    comes up with at most TOOLS_LIMIT callable tools, each a few hundred characters of
    prompt at most."""
    connection = ServerConnection("hostile", StdioServer(
        command=sys.executable, args=["-m", "tests.support.hostile_mcp_server"],
        cwd=str(Path(__file__).parents[2])))  # fmt: skip
    connection.start()
    try:
        await wait_async(lambda: connection.state != "starting", 60)
        assert connection.state == "ready", connection.error
        tools = connection.tools
        # What the settings page polls: a megabyte of description is not sent each time.
        shown = status_view(connection.status(), SecretMasker([]))
    finally:
        await connection.stop()
    assert 0 < len(tools) <= TOOLS_LIMIT
    names = [tool.name for tool in tools]
    assert {"ok.dot", "huge_description", "recursive", "odd_schema"} <= set(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) for name in names), names[:8]
    for tool in tools:
        text = "\n".join([tool.full_name, short(tool.description, DESCRIPTION_LIMIT),
                          arguments_text(tool.input_schema)])  # fmt: skip
        assert len(text) < 1200, tool.name
    assert len(json.dumps(shown)) < 200 * TOOLS_LIMIT + 50_000
    assert argument_problems(next(t for t in tools if t.name == "recursive").input_schema,
                             {"root": {"next": {"next": {}}}}) == []  # fmt: skip


# -- secrets in the mcp_servers setting -------------------------------------------------------


def test_mcp_server_env_and_headers_are_masked_and_kept(shared):
    """Tokens in a server's `env` and `headers` never leave the server in clear, and the
    page's masked text saved back (with an edit) keeps them."""
    http = requests.Session()
    http.headers["X-CSRF-Token"] = csrf_token(http, shared)
    servers = {"mcpServers": {
        "local": {"command": "true", "env": {"GITHUB_TOKEN": "ghp_local_secret", "EMPTY": ""},
                  "disabled": True},
        "remote": {"url": "http://127.0.0.1:9/mcp", "disabled": True,
                   "headers": {"Authorization": "Bearer remote-secret"}}}}  # fmt: skip
    saved = http.post(f"{shared.url}/api/settings",
                      json={"mcp_servers": json.dumps(servers)}, timeout=30)  # fmt: skip
    assert saved.status_code == 200, saved.text
    for shown in (saved.json(), http.get(f"{shared.url}/api/settings", timeout=30).json()):
        assert "secret" not in shown["mcp_servers"]
        assert json.loads(shown["mcp_servers"])["mcpServers"]["local"]["env"] == {
            "GITHUB_TOKEN": "***", "EMPTY": ""}  # fmt: skip
    edited = json.loads(shown["mcp_servers"])
    edited["mcpServers"]["remote"]["headers"]["X-Extra"] = "new-value"
    again = http.post(f"{shared.url}/api/settings", json={"mcp_servers": json.dumps(edited)},
                      timeout=30)  # fmt: skip
    assert again.status_code == 200, again.text
    stored = json.loads(json.loads(settings_file(shared).read_text())["mcp_servers"])
    assert stored["mcpServers"]["local"]["env"]["GITHUB_TOKEN"] == "ghp_local_secret"
    assert stored["mcpServers"]["remote"]["headers"] == {
        "Authorization": "Bearer remote-secret", "X-Extra": "new-value"}  # fmt: skip


#: A local server that prints its token to stderr and dies (as a failing one may).
TELLS_TOKEN = "import os, sys; sys.stderr.write('token is ' + os.environ['TOKEN']); sys.exit(1)"


def test_a_servers_token_in_its_error_output_is_masked(shared):
    http = requests.Session()
    http.headers["X-CSRF-Token"] = csrf_token(http, shared)
    token = "tok-3f9a7c2e1b"
    servers = {"mcpServers": {"teller": {"command": sys.executable, "args": ["-c", TELLS_TOKEN],
                                         "env": {"TOKEN": token}}}}  # fmt: skip
    saved = http.post(f"{shared.url}/api/settings", json={"mcp_servers": json.dumps(servers)},
                      timeout=30)  # fmt: skip
    assert saved.status_code == 200, saved.text

    def told() -> dict | None:
        answer = http.get(f"{shared.url}/api/mcp/servers", timeout=30).json()["servers"]
        teller = next(s for s in answer if s["name"] == "teller")
        return teller if "token is" in teller["stderr_tail"] else None

    try:
        teller = wait_for(told, 60, "the server's error output")
    finally:
        http.post(f"{shared.url}/api/settings", json={"mcp_servers": ""}, timeout=30)
    assert token not in json.dumps(teller) and "token is ***" in teller["stderr_tail"]


def settings_file(server: ServerProcess) -> Path:
    return Path(server.env["CADRE_USR_DIR"]) / "settings.json"


async def test_a_server_command_never_goes_through_a_shell(usr_dir, tmp_path):
    """`command` and `args` are a program and its arguments: shell syntax in them is text."""
    marker = tmp_path / "pwned"
    attempts = [
        StdioServer(command=f"true; touch {marker}"),
        StdioServer(command="echo", args=[f"$(touch {marker})", f"`touch {marker}`", ";", "|"]),
    ]
    for number, config in enumerate(attempts):
        connection = ServerConnection(f"shell{number}", config)
        connection.start()
        try:
            await wait_async(lambda c=connection: c.state == "failed", 60)
        finally:
            await connection.stop()
    assert not marker.exists()


async def wait_async(predicate, timeout: float) -> None:
    for _ in range(int(timeout * 10)):
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the condition did not come true")
