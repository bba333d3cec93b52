"""Naming a chat never holds a model for long: a capped call, or none with a local model."""

from __future__ import annotations

import pytest

from core.agent_types import UserMessage
from initialize import ChatFactory
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
