"""The `mcp_servers` setting: read into typed configs, refused with where and why."""

from __future__ import annotations

import json

import pytest

from helpers.errors import UserError
from helpers.mcp_config import HttpServer, McpConfigError, StdioServer, parse_mcp_servers
from helpers.settings import Settings, load_settings


def servers(**entries: object) -> str:
    return json.dumps({"mcpServers": entries})


def test_the_desktop_clients_format_is_read_in_order():
    found = parse_mcp_servers(servers(
        files={"command": "npx", "args": ["-y", "fs"], "env": {"A": "1"}, "cwd": "/tmp"},
        search={"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
        old={"url": "https://host/sse", "transport": "sse", "disabled": True},
    ))  # fmt: skip
    assert list(found) == ["files", "search", "old"]
    files, search, old = found.values()
    assert isinstance(files, StdioServer) and files.args == ["-y", "fs"]
    assert files.transport == "stdio" and not files.disabled
    assert isinstance(search, HttpServer) and search.transport == "streamable-http"
    assert search.sse_fallback and not old.sse_fallback
    assert (old.transport, old.disabled) == ("sse", True)
    assert parse_mcp_servers("") == {} and parse_mcp_servers("  \n") == {}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{", "not valid JSON: Expecting property name enclosed in double quotes (line 1, "
              "column 2)"),
        ('{"servers": {}}', 'expected a JSON object {"mcpServers": {"<name>": {...}}}'),
        ('{"mcpServers": {}, "x": 1}', "unknown key(s) beside mcpServers: x"),
        (servers(**{"a b": {"command": "x"}}), "server name 'a b': use 1 to 32 letters, "
                                               "digits, '_' or '-' (it starts the names of "
                                               "its tools)"),
        (servers(a=["x"]), "server 'a': expected an object with a command or a url"),
        (servers(a={}), "server 'a': give either a command (local) or a url (remote)"),
        (servers(a={"command": "x", "url": "http://h"}),
         "server 'a': give either a command (local) or a url (remote)"),
        (servers(a={"command": ""}), "server 'a': command: String should have at least 1 "
                                     "character"),
        (servers(a={"command": "x", "args": "-y"}), "server 'a': args: Input should be a "
                                                    "valid list"),
        (servers(a={"command": "x", "env": {"A": 1}}), "server 'a': env.A: Input should be a "
                                                       "valid string"),
        (servers(a={"url": "ftp://h"}), "server 'a': url: must start with http:// or https://"),
        (servers(a={"url": "http://h", "transport": "ws"}),
         "server 'a': transport: Input should be 'streamable-http' or 'sse'"),
        (servers(a={"command": "x", "colour": "red"}), "server 'a': colour: unknown field"),
    ],
)  # fmt: skip
def test_a_wrong_value_names_the_server_and_field(text: str, error: str):
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_servers(text)
    assert str(caught.value) == error


def test_the_setting_is_checked_when_settings_are_made(monkeypatch):
    with pytest.raises(ValueError, match="mcp_servers\n  server 'a': url: must start with"):
        Settings(mcp_servers=servers(a={"url": "h"}))
    monkeypatch.setenv("CADRE_MCP_SERVERS", servers(a={"command": ""}))
    with pytest.raises(UserError, match="server 'a': command"):
        load_settings()
    monkeypatch.setenv("CADRE_MCP_SERVERS", servers(a={"command": "x"}))
    assert list(parse_mcp_servers(load_settings().mcp_servers)) == ["a"]


def test_a_chat_masks_the_tokens_of_mcp_servers_not_their_plain_settings():
    """A server that echoes its token in an error or a result must not put it in the log,
    the history or the model's next prompt; a plain value such as a mode stays readable."""
    from helpers.secrets import chat_masker
    from helpers.settings import Settings

    servers = json.dumps({"mcpServers": {
        "gh": {"command": "gh-mcp",
               "env": {"GITHUB_TOKEN": "ghp_local_secret", "MODE": "production"}},
        "web": {"url": "http://x/mcp", "headers": {"Authorization": "Bearer tok-3f9a7c2e1b"}},
    }})  # fmt: skip
    masker = chat_masker(Settings(mcp_servers=servers))
    said = "failed with ghp_local_secret and tok-3f9a7c2e1b in production"
    assert masker.mask(said) == "failed with *** and *** in production"
