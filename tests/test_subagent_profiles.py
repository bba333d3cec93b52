"""The call_subordinate contract and profile discovery (names follow the contract's spec)."""

from __future__ import annotations

import logging

import pytest

from core.agent import Agent
from core.chat import Chat
from core.delegation.call_one import CallSubordinateArgs
from core.delegation.steps import subordinate_profile_labels, validate_subordinate_profile
from core.prompt.system_prompt import build_system_prompt
from helpers.errors import RepairableException
from helpers.settings import Settings, save_settings
from initialize import agent_config
from profiles import catalog
from profiles import plugins as plugins_module
from tests.support.agents import answer, history_text, make_profile
from tests.support.fake_llm import Reply
from tools.call_subordinate import CallSubordinate


def delegation(agent: Agent, **args: object) -> CallSubordinate:
    return CallSubordinate(agent.ctx, "call_subordinate", None, dict(args), "", None)


async def call(agent: Agent, **args: object) -> str:
    tool = delegation(agent, **args)
    return (await tool.run()).message


@pytest.fixture
def superior(llm) -> Agent:
    return Chat(agent_config()).agent0


async def test_call_subordinate_rejects_unknown_profile(superior):
    with pytest.raises(RepairableException) as caught:
        await call(superior, message="do it", profile="ghost")
    text = str(caught.value)
    assert text.startswith("Agent profile 'ghost' not found. Use one of the available profiles: ")
    assert "developer (Developer)" in text and "researcher (Researcher)" in text
    assert superior.data == {}


async def test_call_subordinate_uses_valid_profile(superior, llm):
    llm.script(Reply(answer("built it")))
    assert await call(superior, message="Build the parser.", profile=" developer ", reset=True) == (
        "built it"
    )
    subordinate = superior.subordinate
    assert subordinate is not None and subordinate.config.profile == "developer"
    assert subordinate.number == 1 and subordinate.chat is superior.chat
    assert subordinate.superior is superior
    assert "Build the parser." in history_text(subordinate)
    # Its work is sealed as a topic once its answer is handed back.
    assert subordinate.history.current.messages == [] and len(subordinate.history.topics) == 1


async def test_call_subordinate_requires_reset_to_change_existing_profile(superior, llm):
    llm.script(Reply(answer("v1")))
    await call(superior, message="Write v1.", profile="developer")
    first = superior.subordinate
    with pytest.raises(RepairableException) as caught:
        await call(superior, message="Now research.", profile="researcher")
    assert str(caught.value) == (
        "Subordinate already uses profile 'developer'. Set reset=true to switch to 'researcher'."
    )
    assert superior.subordinate is first
    assert "Now research." not in history_text(first)
    # Same profile or none: the subordinate continues, no reset needed.
    llm.script(Reply(answer("v2")), Reply(answer("v3")))
    await call(superior, message="Write v2.", profile="developer")
    await call(superior, message="Write v3.")
    assert superior.subordinate is first
    # With reset=true ("TRUE" as a string works too) a new researcher replaces it.
    llm.script(Reply(answer("found")))
    await call(superior, message="Now research.", agent_profile="researcher", reset="TRUE")
    second = superior.subordinate
    assert second is not first and second.config.profile == "researcher"


async def test_agent_profile_set_preserves_subagent_profile(superior, llm):
    llm.script(Reply(answer("ok")))
    await call(superior, message="Task.", profile="developer")
    save_settings(Settings(agent_profile="researcher"))
    subordinate = superior.subordinate
    assert subordinate.config.profile == "developer"
    assert Chat(agent_config()).agent0.config.profile == "researcher"


async def test_no_profile_means_the_default_profile(superior, llm):
    assert validate_subordinate_profile(superior, "   ") == ""
    llm.script(Reply(answer("ok")))
    await call(superior, message="Task.")
    assert superior.subordinate.config.profile == "default"


@pytest.mark.parametrize(
    ("raw", "expected"), [(True, True), ("false", False), ("True", True), (None, False)]
)
def test_reset_accepts_json_booleans_and_strings(raw, expected):
    assert CallSubordinateArgs(message="m", reset=raw).reset is expected


def test_reset_refuses_other_values():
    with pytest.raises(ValueError, match="reset must be true or false"):
        CallSubordinateArgs(message="m", reset="maybe")


def test_profile_labels_list_titles(superior):
    labels = subordinate_profile_labels(superior)
    assert labels["developer"] == "Developer" and labels["researcher"] == "Researcher"


# -- discovery -----------------------------------------------------------------


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.setattr(plugins_module, "SHIPPED_PLUGINS", folder)
    for name in ("p1",):  # a plugin is a folder with its plugin.yaml
        (folder / name).mkdir()
        (folder / name / "plugin.yaml").write_text(f"name: {name}\n")
    return folder


def write_profile(agents_dir, name, title, extra=""):
    root = agents_dir / name
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(f"title: {title}\n{extra}")
    return root


def test_sources_merge_in_order_later_overriding_earlier(plugins, usr_dir):
    write_profile(plugins / "p1" / "agents", "developer", "Plugin Dev")
    write_profile(plugins / "p1" / "agents", "translator", "Translator")
    found = catalog.discover_profiles()
    assert (found["developer"].title, found["developer"].source) == ("Plugin Dev", "plugin:p1")
    assert found["researcher"].source == "shipped"
    write_profile(usr_dir / "agents", "developer", "My Dev")
    found = catalog.discover_profiles()
    assert (found["developer"].title, found["developer"].source) == ("My Dev", "user")
    write_profile(usr_dir / "projects" / "acme" / "agents", "developer", "Acme Dev")
    assert catalog.discover_profiles("acme")["developer"].title == "Acme Dev"
    assert catalog.discover_profiles()["developer"].title == "My Dev"
    assert "translator" in catalog.get_available_agents_dict()


def test_a_user_override_keeps_the_shipped_prompts_it_does_not_replace(usr_dir):
    root = write_profile(usr_dir / "agents", "developer", "My Dev")
    (root / "prompts").mkdir()
    (root / "prompts" / "agent.system.main.solving.md").write_text("## Solving\nTest first.")
    folders = catalog.layered_folders("developer", "prompts")
    assert folders[0] == root / "prompts"
    assert catalog.SHIPPED_AGENTS / "developer" / "prompts" in folders


def test_disabled_profiles_are_hidden(usr_dir):
    write_profile(usr_dir / "agents", "sleepy", "Sleepy", "enabled: false\n")
    assert "sleepy" in catalog.discover_profiles()
    assert "sleepy" not in catalog.get_available_agents_dict()
    project = usr_dir / "projects" / "acme"
    project.mkdir(parents=True)
    (project / "settings.json").write_text('{"disabled_agents": ["researcher"]}')
    assert "researcher" not in catalog.get_available_agents_dict("acme")
    assert "researcher" in catalog.get_available_agents_dict()


async def test_a_dropped_in_profile_is_usable_without_restart(superior, usr_dir, llm):
    with pytest.raises(RepairableException):
        await call(superior, message="Translate.", profile="translator")
    root = write_profile(
        usr_dir / "agents", "translator", "Translator", "context: For translations.\n"
    )
    (root / "prompts").mkdir()
    (root / "prompts" / "agent.system.main.role.md").write_text("## Role\nYou translate.")
    llm.script(Reply(answer("Bonjour")))
    assert await call(superior, message="Translate.", profile="translator", reset=True) == "Bonjour"
    assert "You translate." in llm.chat_requests()[-1].messages[0]["content"]
    tool_prompt = superior.read_prompt("agent.system.tool.call_subordinate.md", brief=False)
    assert "`translator` (Translator): For translations." in tool_prompt


def test_a_broken_agent_yaml_disables_only_that_profile(usr_dir, caplog):
    broken = write_profile(usr_dir / "agents", "broken", "x")
    (broken / "agent.yaml").write_text("title: [unclosed\n")
    no_yaml = usr_dir / "agents" / "bare"
    no_yaml.mkdir()
    with caplog.at_level(logging.ERROR):
        found = catalog.discover_profiles()
    assert found["broken"].error.startswith("agent.yaml is not valid YAML (line 2, column 1)")
    assert found["bare"].error == "no agent.yaml"
    available = catalog.get_available_agents_dict()
    assert "broken" not in available and "bare" not in available and "developer" in available
    assert "agent profile 'broken'" in caplog.text


async def test_profile_settings_override_the_model(superior, usr_dir, llm):
    root = write_profile(usr_dir / "agents", "cheap", "Cheap")
    (root / "settings.json").write_text('{"chat_model": "openai/tiny"}')
    assert catalog.profile_settings("cheap") == {"chat_model": "openai/tiny"}
    llm.script(Reply(answer("cheaply done")))
    assert await call(superior, message="Do it cheaply.", profile="cheap") == "cheaply done"
    assert llm.chat_requests()[-1].body["model"] == "tiny"


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"settings.json": '{"chat_ctx_length": 0}'}, "settings.json: chat_ctx_length:"),
        ({"settings.json": '{"chat_kwargs": [1, 2]}'}, "settings.json: chat_kwargs:"),
        ({"settings.json": '{"chat_modle": "x"}'}, "unknown setting(s) chat_modle"),
        ({"settings.json": "[1]"}, "settings.json: must be a mapping"),
        ({"agent.yaml": 'title: T\nenabled: "false"\n'}, "enabled must be true or false"),
        ({"agent.yaml": "- a list\n"}, "agent.yaml: must be a mapping"),
    ],
)
def test_bad_profile_files_make_it_unavailable_with_the_reason(usr_dir, files, reason):
    root = write_profile(usr_dir / "agents", "odd", "Odd")
    for name, text in files.items():
        (root / name).write_text(text)
    found = catalog.discover_profiles()["odd"]
    assert not found.available and reason in found.error


def test_a_folder_with_only_prompts_overrides_files_not_the_profile(usr_dir):
    root = usr_dir / "agents" / "developer" / "prompts"
    root.mkdir(parents=True)
    (root / "agent.system.main.solving.md").write_text("## Solving\nTest first.")
    found = catalog.get_available_agents_dict()["developer"]
    assert found.title == "Developer" and found.source == "shipped"
    assert catalog.layered_folders("developer", "prompts")[0] == root


def test_agent0_is_not_offered_as_a_subordinate(superior):
    assert "agent0" not in subordinate_profile_labels(superior)
    with pytest.raises(RepairableException, match="Agent profile 'agent0' not found"):
        validate_subordinate_profile(superior, "agent0")


async def test_a_subordinate_takes_the_chats_settings(llm):
    superior = Chat(agent_config({"max_unusable_replies": 7})).agent0
    llm.script(Reply(answer("ok")))
    await call(superior, message="Task.", profile="developer")
    subordinate = superior.subordinate
    assert subordinate.config.settings.max_unusable_replies == 7
    assert subordinate.config.overrides["agent_profile"] == "developer"


async def test_a_failing_subordinate_is_reported_to_its_superior(superior, llm):
    llm.script(Reply("nonsense"), Reply("more nonsense"), Reply("still nonsense"))
    with pytest.raises(RepairableException, match="Your subordinate A1 stopped without an answer"):
        await call(superior, message="Task.", profile="developer")
    error = next(i for i in superior.chat.log.items if i.type == "error")
    assert error.agentno == 1 and "unusable replies" in error.content
    assert superior.chat.working_agent is superior


def test_the_runaway_check_is_quick_on_long_tasks():
    from core.delegation.steps import is_same_task

    long_task = "Analyse the following report and list every risk. " + "data " * 30_000
    assert is_same_task(long_task, long_task.upper() + "  ")
    assert not is_same_task(long_task, "Summarise this. " + "other " * 30_000)
    assert not is_same_task("short task", "a much longer and entirely different task")


async def test_profile_prompts_and_tools_apply_to_that_agent_only(superior, usr_dir, llm):
    tool = """
from core.tool import Response, Tool

class Stamp(Tool):
    async def execute(self, args):
        return Response(message="stamped")
"""
    make_profile(
        usr_dir,
        "stamper",
        tools={"stamp": tool},
        prompts={"agent.system.main.role.md": "## Role\nYou stamp documents."},
    )
    llm.script(Reply(answer("done")))
    await call(superior, message="Stamp it.", profile="stamper")
    subordinate_system = llm.chat_requests()[-1].messages[0]["content"]
    # The profile's tool is listed by its line (its manual's first line of text).
    assert "You stamp documents." in subordinate_system
    assert "- `stamp`: A test tool." in subordinate_system
    superior_system = await build_system_prompt(superior)
    assert "You stamp documents." not in superior_system and "`stamp`" not in superior_system
    assert "stamp" not in superior.available_tools()


async def test_the_tool_prompt_lists_profiles_with_when_to_use_them(superior):
    text = superior.read_prompt("agent.system.tool.call_subordinate.md", brief=False)
    assert "- `researcher` (Researcher): Use for research" in text
    assert "`agent0`" not in text  # the user's own agent is no subordinate profile
    assert '"reset": true' in text


def test_subordinate_message_is_required():
    with pytest.raises(ValueError, match="message"):
        CallSubordinateArgs.model_validate({"profile": "developer"})


async def test_delegation_log_item_names_the_caller_and_the_subordinate(superior, llm):
    llm.script(Reply(answer("ok")))
    await call(superior, message="Task.", profile="researcher")
    item = next(i for i in superior.chat.log.items if i.type == "subagent")
    assert item.heading == "A0: Calling subordinate agent"
    assert item.kvps["message"] == "Task." and item.kvps["profile"] == "researcher"
    assert item.kvps["subordinate"] == "A1" and item.content == "ok"
