"""Agent Zero's profile folders and tools, dropped into `usr/agents/`, work unchanged.

Driven through the real loop against the scripted fake model: what a profile
contributes is checked in the requests the fake server received.
"""

from __future__ import annotations

import logging

import pytest

from core.agent_types import UserMessage
from profiles.catalog import subordinate_profiles
from tests.support import agent_zero_profiles as a0
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply


def chat_calls(llm) -> list:
    """The chat model's requests (the utility model's, e.g. naming the chat, left out)."""
    return [r for r in llm.chat_requests() if r.body.get("model") == "chat-model"]


def system_of(request) -> str:
    return request.messages[0]["content"]


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("developer", [a0.DEVELOPER_SPECIFICS]),
        ("researcher", [a0.RESEARCHER_SPECIFICS, a0.RESEARCHER_ADDITIONS]),
        ("analyst", [a0.ANALYST_SPECIFICS]),  # agent.json
    ],
)
def test_delegation_to_an_agent_zero_profile(make_context, llm, usr_dir, profile, expected):
    for write in (a0.write_developer, a0.write_researcher, a0.write_json_profile):
        write(usr_dir)
    llm.script(
        Reply(reply("call_subordinate", message="Do the subtask.", profile=profile, reset=True)),
        Reply(answer("Subtask done.")),  # A1, of the Agent Zero profile
        Reply(answer("All done.")),  # A0
    )
    context = make_context()
    assert context.communicate(UserMessage("Go.")).result(30) == "All done."
    assert context.agent0.subordinate.config.profile == profile
    subordinate_system = system_of(chat_calls(llm)[1])
    for text in expected:
        assert text in subordinate_system
    assert "{{" not in subordinate_system


def test_agent0_answers_with_a_copied_agent0_folder(make_context, llm, usr_dir, caplog):
    a0.write_all(usr_dir)
    llm.script(Reply(answer("Hello!")), Reply(answer("Hello again!")))
    context = make_context()
    with caplog.at_level(logging.WARNING, logger="profiles.prompts"):
        assert context.communicate(UserMessage("Hi")).result(30) == "Hello!"
        assert make_context().communicate(UserMessage("Hi")).result(30) == "Hello again!"
    tips = [r for r in caplog.records if "response_tool_tips" in r.getMessage()]
    assert len(tips) == 1  # one warning, however often the prompt is built
    system = system_of(chat_calls(llm)[0])
    assert a0.AGENT0_ROLE in system
    assert "Cadre autonomous json ai agent" in system  # Agent Zero's {{brand_name}}
    assert "final answer to user" in system  # its response tool prompt, tips left out
    assert "agent0" not in subordinate_profiles()


def test_copied_agent0_is_a_subordinate_when_it_says_so(usr_dir):
    root = a0.write_agent0(usr_dir)
    (root / "agent.json").write_text('{"title": "General", "subordinate": true}')
    assert "agent0" in subordinate_profiles()


def test_an_agent_zero_tool_runs_and_its_result_reaches_the_model(make_context, llm, usr_dir):
    a0.write_toolsmith(usr_dir)
    llm.script(
        Reply(reply("word_count", text="one two three four")),
        Reply(answer("Four words.")),
    )
    context = make_context(agent_profile="toolsmith")
    assert context.communicate(UserMessage("Count.")).result(30) == "Four words."
    assert "The text has 4 words." in chat_calls(llm)[1].messages[-1]["content"]


def test_a_tool_needing_a_missing_module_is_unavailable_not_fatal(make_context, llm, usr_dir):
    a0.write_toolsmith(usr_dir)
    llm.script(
        Reply(reply("browse_web", url="http://example.invalid")),
        Reply(reply("quiet_tool")),
        Reply(answer("I cannot browse here.")),
    )
    context = make_context(agent_profile="toolsmith")
    assert context.communicate(UserMessage("Browse.")).result(30) == "I cannot browse here."
    calls = chat_calls(llm)
    system = system_of(calls[0])
    # The model is told, up front, which tools it cannot use and why.
    assert "browse_web" in system and "python.helpers.browser_use" in system
    assert "quiet_tool" in system and "agent.system.tool.quiet_tool.md" in system
    assert "- `word_count`: " in system  # the working tool is offered as before (its line:
    # its prompt file's first line of text, as it has no brief of its own)
    # Calling one anyway is a repairable error naming the missing module.
    told = calls[1].messages[-1]["content"]
    assert "browse_web" in told and "python.helpers.browser_use" in told
    assert "quiet_tool" in calls[2].messages[-1]["content"]
    assert not [item for item in context.log.items if item.type == "error"]


def test_profiles_api_shows_status_and_file_origins(http, usr_dir):
    a0.write_all(usr_dir)
    found = {p["name"]: p for p in http.get("/api/profiles").json}
    toolsmith = found["toolsmith"]["status"]
    unavailable = {t["name"]: t["reason"] for t in toolsmith["unavailable_tools"]}
    assert "python.helpers.browser_use" in unavailable["browse_web"]
    assert "agent.system.tool.quiet_tool.md" in unavailable["quiet_tool"]
    agent0 = found["agent0"]
    assert agent0["subordinate"] is False
    assert any("agent.system.response_tool_tips.md" in w for w in agent0["status"]["warnings"])
    origins = {f["path"]: f["origin"] for f in agent0["status"]["files"]}
    assert origins["agent.json"] == "user"
    assert origins["prompts/agent.system.main.role.md"] == "user"
    developer = {f["path"]: f["origin"] for f in found["developer"]["status"]["files"]}
    assert developer["prompts/agent.system.main.specifics.md"] == "user"
    assert found["analyst"]["available"] is True
    shipped = {f["path"]: f["origin"] for f in found["default"]["status"]["files"]}
    assert shipped["agent.yaml"] == "shipped"


LEGACY_TOOL = """
from python.helpers.tool import Tool, Response


class Legacy(Tool):
    async def execute(self, **kwargs):
        self.agent.hist_add_warning("Legacy checked its input.")
        return Response(message="Legacy done.", break_loop=False, additional={"finished": True})
"""


def test_an_agent_zero_tool_keeps_its_names_and_its_own_additional_keys(make_context, llm, usr_dir):
    """Agent Zero's tools call `self.agent.hist_add_*` and return `additional` keys of their
    own: they run as they are."""
    root = a0.write_toolsmith(usr_dir)
    (root / "tools" / "legacy.py").write_text(LEGACY_TOOL)
    (root / "prompts" / "agent.system.tool.legacy.md").write_text("### legacy:\nold style\n")
    llm.script(Reply(reply("legacy")), Reply(answer("Done.")))
    context = make_context(agent_profile="toolsmith")
    assert context.communicate(UserMessage("Go.")).result(30) == "Done."
    sent = chat_calls(llm)[1].messages[-1]["content"]
    assert "Legacy done." in sent
    assert "Legacy checked its input." in str(chat_calls(llm)[1].messages)
