"""A system prompt that uses a chat's variables is shared only by chats where they agree."""

from __future__ import annotations

import asyncio

from core.chat import Chat
from core.prompt.system_prompt import build_system_prompt
from initialize import agent_config
from tests.support.agents import backdate, make_profile


def build(context: Chat) -> str:
    return asyncio.run(build_system_prompt(context.agent0))


def chat(**variables: str) -> Chat:
    context = Chat(agent_config({"agent_profile": "desk"}))
    context.set_variables(variables)
    return context


def test_chats_share_a_prompt_only_while_the_values_it_used_agree(usr_dir):
    make_profile(usr_dir, "desk", prompts={"agent.system.main.md": "Serve {{ctx.customer}}."})
    backdate(usr_dir, 3600)
    acme = chat(customer="ACME", note="one")
    assert build(acme).startswith("Serve ACME.")
    built = acme.agent0.built_prompt

    same = chat(customer="ACME", note="two")  # a variable no prompt reads differs
    build(same)
    assert same.agent0.built_prompt is built  # shared: built once

    other = chat(customer="Initech")
    assert build(other).startswith("Serve Initech.")
    assert other.agent0.built_prompt is not built

    acme.set_variables({"customer": "Globex"})
    assert build(acme).startswith("Serve Globex.")


def test_a_secret_in_a_variable_is_masked_in_the_prompt(usr_dir, monkeypatch):
    monkeypatch.setenv("CADRE_SECRETS", '{"TOKEN": "tok-123456"}')
    make_profile(usr_dir, "desk", prompts={"agent.system.main.md": "Key: {{ctx.key}}."})
    assert build(chat(key="tok-123456")).startswith("Key: ***.")


def test_every_agent_reads_a_prompt_file_once_and_an_edit_again(usr_dir, monkeypatch):
    from profiles import prompts

    make_profile(usr_dir, "desk", prompts={"fw.user_message.md": "Note: {{message}}"})
    backdate(usr_dir, 3600)
    reads: list[str] = []
    read = prompts._read_template
    monkeypatch.setattr(
        prompts, "_read_template", lambda path: reads.append(path.name) or read(path)
    )

    first, second = chat(), chat()
    assert first.agent0.read_prompt("fw.user_message.md", message="a") == "Note: a"
    assert second.agent0.read_prompt("fw.user_message.md", message="b") == "Note: b"
    assert reads == ["fw.user_message.md"]  # the second agent used the first one's parse

    make_profile(usr_dir, "desk", prompts={"fw.user_message.md": "Changed: {{message}}"})
    backdate(usr_dir, 3600 - 60)  # a newer stamp, and settled
    assert chat().agent0.read_prompt("fw.user_message.md", message="c") == "Changed: c"
