"""A person's own settings (accounts/personal.py): what they may set, how it lies over the
server's settings, and their own MCP servers' text, on real files."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import ValidationError

from accounts import personal
from helpers.errors import UserError
from helpers.mcp_config import parse_mcp_servers
from helpers.settings import Settings

SERVER = Settings(
    chat_model="openai/server-model",
    secrets={"SHARED": "shared-1", "ADMINS": "admins-1", "PERSON": "the-servers"},
    member_secrets=["SHARED", "GONE"],
    mcp_servers=json.dumps({"mcpServers": {
        "team": {"url": "http://team.example/mcp", "headers": {"X-Person": "§§secret(PERSON)"},
                 "per_user": True},
        "search": {"url": "http://search.example/mcp"},
    }}),
)  # fmt: skip


def test_a_member_gets_the_shared_secrets_and_their_own_an_admin_every_one():
    own = personal.PersonalSettings(secrets={"MINE": "mine-1", "SHARED": "my-own-shared"})
    assert personal.overrides(SERVER, own, member=True)["secrets"] == {
        "SHARED": "my-own-shared", "MINE": "mine-1"}  # fmt: skip
    as_admin = personal.overrides(SERVER, own, member=False)["secrets"]
    assert as_admin["ADMINS"] == "admins-1" and as_admin["MINE"] == "mine-1"


def test_own_models_apply_only_where_the_admin_allows_them():
    own = personal.PersonalSettings(chat_model="openai/mine", chat_api_key="k-1")
    assert "chat_model" not in personal.overrides(SERVER, own, member=True)
    allowed = SERVER.model_copy(update={"member_models": True})
    laid = personal.overrides(allowed, own, member=True)
    assert laid["chat_model"] == "openai/mine" and laid["chat_api_key"] == "k-1"
    assert "util_model" not in laid  # not set: the server's stays
    assert personal.overrides(SERVER, own, member=False)["chat_model"] == "openai/mine"


def test_own_mcp_servers_are_remote_and_never_shadow_the_servers():
    with pytest.raises(ValidationError, match="only the admin can add a server that runs"):
        personal.PersonalSettings(mcp_servers=json.dumps(
            {"mcpServers": {"x": {"command": "sh", "args": ["-c", "id"]}}}))  # fmt: skip
    own = personal.PersonalSettings(
        secrets={"PERSON": "ann"},
        mcp_servers=json.dumps({"mcpServers": {"mine": {"url": "http://mine.example/mcp"},
                                               "search": {"url": "http://evil.example/mcp"}}}),
    )  # fmt: skip
    text = personal.mcp_text(SERVER, own, member=True)
    servers = parse_mcp_servers(text)
    assert sorted(servers) == ["mine", "team"]  # their "search" would shadow the server's
    assert servers["team"].headers == {"X-Person": "ann"}
    merged = json.loads(personal.overrides(SERVER, own, member=True)["mcp_servers"])
    assert merged["mcpServers"]["search"]["url"] == "http://search.example/mcp"


def test_a_per_person_server_needing_a_secret_they_lack_is_not_started(caplog):
    no_person = SERVER.model_copy(update={"secrets": {"SHARED": "shared-1"}})
    with caplog.at_level(logging.WARNING):
        assert personal.mcp_text(no_person, personal.PersonalSettings(), member=True) == ""
    assert "team is not started for this person: it needs the secret(s) PERSON" in caplog.text


def test_the_shared_supervisor_leaves_per_person_servers_out(tmp_path):
    from helpers.runtime import AgentRuntime
    from mcp_client.supervisor import McpSupervisor

    runtime = AgentRuntime()
    shared = McpSupervisor(runtime).prepare(SERVER.mcp_servers)
    assert sorted(shared) == ["search"]
    personal_one = McpSupervisor(runtime, space=tmp_path).prepare(SERVER.mcp_servers)
    assert sorted(personal_one) == ["search", "team"]  # given it, a person's starts it


def test_saved_whole_owner_only_and_a_damaged_file_is_ignored(tmp_path, caplog):
    saved = personal.save(tmp_path, {"secrets": {"A": "value-a"}})
    assert saved.secrets == {"A": "value-a"}
    personal.save(tmp_path, {"chat_model": "openai/x"})  # the secrets stay
    path = personal.settings_file(tmp_path)
    assert json.loads(path.read_text())["secrets"] == {"A": "value-a"}
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(UserError, match="work_dir: not a setting of yours"):
        personal.save(tmp_path, {"work_dir": "/"})
    with pytest.raises(UserError, match="chat_api_base: .*starts with http"):
        personal.save(tmp_path, {"chat_api_base": "file:///etc/passwd"})
    path.write_bytes(b"\xff{not json")
    with caplog.at_level(logging.ERROR):
        assert personal.load(tmp_path) == personal.PersonalSettings()
    assert "is damaged and ignored" in caplog.text


def test_a_persons_own_server_takes_their_secrets_too():
    own = personal.PersonalSettings(
        secrets={"PERSON": "ann", "NOTES_TOKEN": "t-1"},
        mcp_servers=json.dumps({"mcpServers": {
            "notes": {"url": "http://notes.example/mcp",
                      "headers": {"Authorization": "Bearer §§secret(NOTES_TOKEN)"}},
            "other": {"url": "http://other.example/mcp",
                      "headers": {"Authorization": "Bearer §§secret(MISSING)"}}}}),
    )  # fmt: skip
    servers = parse_mcp_servers(personal.mcp_text(SERVER, own, member=True))
    assert servers["notes"].headers == {"Authorization": "Bearer t-1"}
    assert "other" not in servers  # a secret they lack: not started (the log says why)
