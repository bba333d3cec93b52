"""Naming a chat never holds a model for long: a capped call, or none with a local model.
It is the shipped plugin plugins/chat_naming: switched off, chats keep no automatic name."""

from __future__ import annotations

import json

import pytest

from core.agent_types import UserMessage
from helpers.folders import chats_dir
from initialize import ChatFactory
from profiles.plugin_switches import switch
from profiles.plugins import discover_plugins
from store.chats import ChatManager
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def test_the_naming_call_is_capped_to_a_few_tokens(chats, llm):
    llm.add_rule(model_is("util-model"), Reply("Multiplying numbers"))
    llm.script(Reply(answer("391")))
    context = chats.new_chat()
    context.communicate(UserMessage("what is 17*23?")).result(30)
    wait_for(lambda: context.name == "Multiplying numbers", what="the automatic name")
    naming = [r for r in llm.chat_requests() if r.body["model"] == "util-model"]
    assert len(naming) == 1 and naming[0].body["max_tokens"] == 24


def test_a_local_utility_model_is_not_called_the_first_message_names_the_chat(
    chats, llm, monkeypatch, tmp_path
):
    # A file that is no model: a call to the local model would fail, never name the chat.
    monkeypatch.setenv("CADRE_UTIL_MODEL", "local/qwen2.5-coder-1.5b")
    monkeypatch.setenv("CADRE_LOCAL_MODEL_PATH", str(tmp_path / "missing.gguf"))
    llm.script(Reply(answer("391")))
    context = chats.new_chat()
    context.communicate(UserMessage("what is 17*23? I need it for my homework.")).result(30)
    wait_for(lambda: context.name, what="the name")
    assert context.name == "What is 17*23? I need it…"
    assert [r.body["model"] for r in llm.chat_requests()] == ["chat-model"]
    assert not [i for i in context.log.items if i.type == "util"]


def test_naming_is_a_shipped_plugin_switched_off_no_chat_is_named(chats, llm):
    # Chat naming is the shipped plugin plugins/chat_naming: off, the seam is all there is.
    plugin = discover_plugins()["chat_naming"]
    assert plugin.source == "shipped" and plugin.handlers_file is not None
    switch("chat_naming", False)
    llm.add_rule(model_is("util-model"), Reply("Multiplying numbers"))
    llm.script(Reply(answer("391")), Reply(answer("782")))
    context = chats.new_chat()
    context.communicate(UserMessage("what is 17*23?")).result(30)
    assert context.name == "" and not [r for r in llm.chat_requests()
                                       if r.body["model"] == "util-model"]  # fmt: skip
    switch("chat_naming", True)  # on again, without a restart: the next save names it
    context.communicate(UserMessage("and twice that?")).result(30)
    saved = chats_dir() / context.id / "chat.json"
    wait_for(lambda: json.loads(saved.read_text())["name"] == "Multiplying numbers",
             what="the automatic name, saved")  # fmt: skip
    assert context.name == "Multiplying numbers"
