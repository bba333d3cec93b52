"""The admin decides which tools members' agents may use (the `member_tools` setting):
a member's chat is offered only those (and `response`); an admin's, and the one person's
of the desktop mode, every tool."""

from __future__ import annotations

from accounts.users import Users
from core.chat import Chat
from core.tooling.tool_offer import allowed_to_members
from helpers.settings import Settings
from initialize import agent_config

LIMITED = {"chat_model": "openai/gpt-4.1", "member_tools": ["memory_load", "github.*"]}


def offered(owner: str | None, **overrides: object) -> list[str]:
    chat = Chat(agent_config({**LIMITED, **overrides}), owner=owner)
    return chat.agent0.ctx.available_tools()


def test_a_members_agents_are_offered_only_the_tools_the_admin_allows():
    users = Users()
    users.add("boss", "admin", "the boss's password")
    users.add("bea", "member", "bea's password")
    assert sorted(offered("bea")) == ["memory_load", "response"]
    everything = offered("boss")
    assert {"code_execution_tool", "memory_load", "call_subordinate"} <= set(everything)
    assert offered(None) == everything  # the desktop mode
    assert "code_execution_tool" in offered("bea", member_tools=[])  # empty: every tool


def test_an_mcp_servers_tools_are_allowed_by_name_or_all_at_once():
    settings = Settings(member_tools=["memory_load", "github.*", "files.read"])
    assert allowed_to_members(settings, "github.create_issue")
    assert allowed_to_members(settings, "files.read")
    assert not allowed_to_members(settings, "files.write")
    assert not allowed_to_members(settings, "code_execution_tool")
    assert allowed_to_members(settings, "response")
