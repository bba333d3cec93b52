"""The system prompt is built once and reused until a file or a companion's answer changes."""

from __future__ import annotations

import asyncio
import os
import time

from core.chat import Chat
from core.prompt.system_prompt import build_system_prompt
from initialize import agent_config
from tests.support.agents import ECHO_TOOL, backdate, make_profile


def build(context: Chat) -> str:
    return asyncio.run(build_system_prompt(context.agent0))


def test_reused_until_a_prompt_a_tool_or_a_profile_changes(usr_dir):
    root = make_profile(usr_dir, "writer", prompts={"agent.system.main.md": "Writer v1."})
    backdate(usr_dir, 3600)
    context = Chat(agent_config({"agent_profile": "writer"}))
    agent = context.agent0

    first = build(context)
    built = agent.built_prompt
    assert first.startswith("Writer v1.")
    assert build(context) == first and agent.built_prompt is built  # reused, not rebuilt

    (root / "prompts" / "agent.system.main.md").write_text("Writer v2.")  # an edit
    assert build(context).startswith("Writer v2.")

    (root / "tools" / "echo.py").write_text(ECHO_TOOL)  # a new tool, and its prompt
    (root / "prompts" / "agent.system.tool.echo.md").write_text("### echo\nSays it back.")
    backdate(usr_dir, 1800)
    assert "### echo" in build(context)
    built = agent.built_prompt
    build(context)
    assert agent.built_prompt is built

    # A new profile changes what the call_subordinate companion says, not a file
    # the prompt itself was read from: the companion's answer is checked too.
    reviewer = make_profile(usr_dir, "reviewer", yaml="title: Reviewer\ndescription: reviews\n")
    backdate(reviewer, 900)
    then = time.time() - 900
    os.utime(usr_dir / "agents", (then, then))
    assert "`reviewer` (Reviewer)" in build(context)
    assert agent.built_prompt is not built


def test_files_written_just_now_are_read_again_every_time(usr_dir):
    """Within the racy window an edit may keep its mtime, so nothing is reused."""
    make_profile(usr_dir, "writer", prompts={"agent.system.main.md": "Fresh."})
    context = Chat(agent_config({"agent_profile": "writer"}))
    build(context)
    built = context.agent0.built_prompt
    build(context)
    assert context.agent0.built_prompt is not built


def test_parses_of_files_written_just_now_are_not_kept(usr_dir):
    """Their stamp may not show an edit in the same clock tick: read them again next time."""
    from profiles import catalog
    from profiles.prompts import PromptCache, PromptLoader

    folder = usr_dir / "prompts"
    folder.mkdir()
    (folder / "x.md").write_text("one")
    cache = PromptCache()
    loader = PromptLoader([folder], cache)
    assert loader.render("x.md") == "one"
    assert cache._templates == {}
    backdate(folder, 60)
    assert loader.render("x.md") == "one"
    assert list(cache._templates) == [folder / "x.md"]

    root = make_profile(usr_dir, "fresh")
    catalog.discover_profiles()
    assert root / "agent.yaml" not in catalog._files._parsed
    backdate(root, 60)
    catalog.discover_profiles()
    assert root / "agent.yaml" in catalog._files._parsed


def test_a_link_loop_among_the_profiles_is_ignored(usr_dir):
    from profiles.catalog import discover_profiles

    make_profile(usr_dir, "real")
    (usr_dir / "agents" / "loop").symlink_to("loop")
    (usr_dir / "agents" / "real" / "prompts" / "agent.system.main.md").symlink_to(
        "agent.system.main.md"
    )
    assert "real" in discover_profiles() and "loop" not in discover_profiles()
    context = Chat(agent_config({"agent_profile": "real"}))
    assert "`real` (real)" in build(context)  # the looping prompt file is not there: shipped one


def test_the_profile_answers_kept_are_bounded(usr_dir):
    from profiles import catalog

    for n in range(catalog.DISCOVERED_KEPT + 8):
        (usr_dir / "projects" / f"p{n}").mkdir(parents=True)
        catalog.discover_profiles(f"p{n}")
    assert len(catalog._discovered) <= catalog.DISCOVERED_KEPT


COMPANION = """
def get_variables(context, **variables):
    return {"chat": context.context.id}
"""


def test_a_prompt_built_for_one_chat_serves_the_next_when_it_would_say_the_same(usr_dir):
    make_profile(usr_dir, "writer", prompts={"agent.system.main.md": "Writer."})
    make_profile(usr_dir, "per_chat", prompts={
        "agent.system.main.md": "Chat {{chat}}.", "agent.system.main.py": COMPANION,
    })  # fmt: skip
    backdate(usr_dir, 3600)
    first, second = (Chat(agent_config({"agent_profile": "writer"})) for _ in range(2))
    build(first)
    assert build(second).startswith("Writer.")
    assert second.agent0.built_prompt is first.agent0.built_prompt  # built once

    # A companion that answers per chat: each chat gets its own prompt.
    one, two = (Chat(agent_config({"agent_profile": "per_chat"})) for _ in range(2))
    assert build(one).startswith(f"Chat {one.id}.")
    assert build(two).startswith(f"Chat {two.id}.")
    assert build(one).startswith(f"Chat {one.id}.")
