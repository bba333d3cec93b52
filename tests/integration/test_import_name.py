"""An imported chat is told apart from the chat it was exported from by its name."""

from __future__ import annotations

import json

import pytest

from core.agent_types import UserMessage
from initialize import ChatFactory
from store import persist_chat
from store.chats import NAME_LIMIT, ChatManager, chat_row
from tests.support.agents import answer
from tests.support.fake_llm import Reply


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def test_an_imported_chat_is_named_after_the_original_with_imported(chats, llm, usr_dir):
    llm.script(Reply(answer("Hi.")))
    original = chats.new_chat()
    original.communicate(UserMessage("hello")).result(30)
    chats.rename(original.id, "Trip plans")
    document = json.loads(json.dumps(chats.export(original.id)))

    imported = chats.import_chat(document)

    assert imported.name == "Trip plans (imported)"
    assert persist_chat.read_chat(imported.id).name == "Trip plans (imported)"
    listed = {row["id"]: row["name"] for row in chats.summaries(chat_row)}
    assert listed[original.id] == "Trip plans"
    assert listed[imported.id] == "Trip plans (imported)"


def test_an_unnamed_chat_is_imported_as_imported_chat(chats, usr_dir):
    original = chats.new_chat()
    document = json.loads(json.dumps(chats.export(original.id)))

    assert chats.import_chat(document).name == "Imported chat"


def test_a_long_name_is_cut_to_keep_the_mark_within_the_limit(chats, usr_dir):
    original = chats.new_chat()
    chats.rename(original.id, "word " * 40)
    document = json.loads(json.dumps(chats.export(original.id)))

    name = chats.import_chat(document).name

    assert len(name) <= NAME_LIMIT and name.endswith("word (imported)")
