"""A plugin's manifest read and checked in plain words; switches layered global < profile <
project, and kept whole when two threads change them at once."""

from __future__ import annotations

import threading
import time

import pytest

from core.prompt.chat_variables import prompt_loader
from core.tooling.tool_loader import tool_names
from profiles import plugin_switches
from profiles.plugins import active_plugins, discover_plugins, plugin_folders, read_manifest


def write(folder, name, text, parts=()):
    root = folder / "plugins" / name
    root.mkdir(parents=True)
    (root / "plugin.yaml").write_text(text)
    for part in parts:
        (root / part).mkdir()
    return root


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("name: ../a\n", "plugin.yaml: name: Value error, use letters"),
        ("name: a\nversion: [1]\n", "plugin.yaml: version:"),
        ("name: a\nrequires: {python: ['--index-url=http://x']}\n", "is not a package requirement"),
        ("name: a\nhandlers: ../evil.py\n", "must be a path inside the plugin's folder"),
        ("name: a\nrequires: {node: [x]}\n", "plugin.yaml: requires.node: Extra inputs"),
        ("- a\n- b\n", "must be a mapping of fields"),
        ("name: a\n  bad: [\n", "plugin.yaml is not valid YAML"),
    ],
)
def test_a_bad_manifest_is_told_in_plain_words(usr_dir, text, says):
    root = write(usr_dir, "a", text)
    with pytest.raises(ValueError, match=".") as told:
        read_manifest(root)
    assert says in str(told.value)
    assert says in discover_plugins()["a"].error


def test_a_folder_named_otherwise_than_its_manifest_is_refused(usr_dir):
    write(usr_dir, "b", "name: c\n")
    assert "names it 'c' but its folder is 'b'" in discover_plugins()["b"].error


def test_agent_zero_fields_are_kept_as_unused_and_a_number_version_is_text(usr_dir):
    write(usr_dir, "a0", "name: a0\nversion: 1.0\nalways_enabled: true\n", parts=["tools"])
    found = discover_plugins()["a0"]
    assert found.usable and found.manifest.version == "1.0"
    assert found.unused == ("always_enabled",) and found.parts == ("tools",)


def shipped_plugins() -> set[str]:
    return {name for name, p in discover_plugins().items() if p.source == "shipped"}


def users(plugins: list) -> list[str]:
    """The names of the user's plugins among `plugins` (Cadre ships some of its own)."""
    return [p.name for p in plugins if p.source == "user"]


def test_switches_most_specific_first_without_a_restart(usr_dir):
    write(usr_dir, "p", "name: p\n", parts=["tools"])
    write(usr_dir, "q", "name: q\nenabled: false\n", parts=["tools"])
    (usr_dir / "projects" / "alpha").mkdir(parents=True)
    assert users(active_plugins()) == ["p"]
    plugin_switches.switch("p", False)
    plugin_switches.switch("p", True, "profiles", "researcher")
    plugin_switches.switch("p", False, "projects", "projects/alpha")
    plugin_switches.switch("q", True, "projects", "projects/alpha")
    assert users(active_plugins()) == []
    assert users(active_plugins("researcher")) == ["p"]
    assert users(active_plugins("researcher", "alpha")) == ["q"]
    mine = [n for n, _ in plugin_folders("tools", "", "alpha") if n not in shipped_plugins()]
    assert mine == ["q"]
    plugin_switches.forget("p")
    assert users(active_plugins("researcher")) == ["p"]


def test_a_step_that_waited_sees_a_plugin_switched_off_meanwhile(usr_dir):
    """A step looks at the plugins once (helpers/file_snapshot.one_look), but a step that
    waited (a pause, a model's reply) looks again: a plugin switched off meanwhile brings no
    tool to the call that follows (a review found it still offered). A switch made within a
    step is answered as written."""
    from helpers import file_snapshot
    from helpers.file_snapshot import one_look

    write(usr_dir, "p", "name: p\n", parts=["tools"])
    (usr_dir / "plugins" / "p" / "tools" / "probe.py").write_text("")
    with one_look():
        assert users(active_plugins()) == ["p"] and "probe" in tool_names("agent0")
        written = plugin_switches.switch("p", False)  # a person, in the page, meanwhile
        assert written["global"] == {"p": False}
        time.sleep(file_snapshot.LOOK_SECONDS + 0.1)  # the step waited
        assert users(active_plugins()) == [] and "probe" not in tool_names("agent0")


def test_two_threads_switching_at_once_keep_both_changes(usr_dir):
    names = [f"p{i}" for i in range(16)]
    threads = [threading.Thread(target=plugin_switches.switch, args=(n, False)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert plugin_switches.load()["global"] == dict.fromkeys(names, False)


def test_mcp_servers_of_active_plugins_join_the_setting_and_the_setting_wins(usr_dir):
    import json

    from profiles.plugin_mcp import with_plugin_servers
    from profiles.plugins import problems

    write(usr_dir, "m", "name: m\nmcp_servers:\n  files: {command: echo}\n"
          "  web: {url: 'http://127.0.0.1:9/mcp'}\n  bad: {command: ''}\n")  # fmt: skip
    own = json.dumps({"mcpServers": {"web": {"command": "mine"}}})
    merged = json.loads(with_plugin_servers(own))["mcpServers"]
    assert merged == {"files": {"command": "echo"}, "web": {"command": "mine"}}
    assert [p["where"] for p in problems("m")] == ["MCP server bad"]
    plugin_switches.switch("m", False)
    assert with_plugin_servers(own) == own


def test_the_notify_user_tool_is_a_shipped_plugin_switched_per_profile(usr_dir):
    # Cadre's own notify_user tool and its prompts ship as plugins/notify_user.
    assert discover_plugins()["notify_user"].parts == ("tools", "prompts")
    assert "notify_user" in tool_names("agent0")
    assert prompt_loader("agent0", None).exists("agent.system.tool.notify_user.md")
    plugin_switches.switch("notify_user", False)
    assert "notify_user" not in tool_names("agent0")
    assert not prompt_loader("agent0", None).exists("agent.system.tool.notify_user.md")
    plugin_switches.switch("notify_user", True, "profiles", "developer")
    assert "notify_user" in tool_names("developer") and "notify_user" not in tool_names("agent0")
