"""The index of conversations the OpenAI-compatible endpoint answered: on disk, bounded."""

from __future__ import annotations

import json

import pytest

from server.apis.openai_compat import conversations as openai_conversations
from server.apis.openai_compat.conversations import ConversationIndex


def test_a_remembered_conversation_is_found_by_a_new_process(tmp_path):
    path = tmp_path / "index" / "openai_conversations.json"
    ConversationIndex(path).remember("k1", "chat-1")
    again = ConversationIndex(path)  # as after a restart
    assert again.find("k1") == "chat-1" and again.find("k2") is None
    assert json.loads(path.read_text())["version"] == openai_conversations.VERSION
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


@pytest.mark.parametrize("damage", ["{not json", '{"chats": ' + "[" * 100_000])
def test_a_damaged_index_is_ignored_and_replaced(tmp_path, caplog, damage):
    """A 100k-deep one too (a restore brings the file in unread): RecursionError had made
    every continuation of the OpenAI-compatible endpoint fail."""
    path = tmp_path / "openai_conversations.json"
    path.write_text(damage)
    index = ConversationIndex(path)
    assert index.find("k") is None and "damaged conversation index" in caplog.text
    index.remember("k", "chat")
    assert ConversationIndex(path).find("k") == "chat"


def test_only_the_newest_conversations_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(openai_conversations, "KEEP", 3)
    index = ConversationIndex(tmp_path / "index.json")
    for n in range(4):
        index.remember(f"k{n}", f"chat-{n}")
    index.remember("k1", "chat-1")  # used again: the newest now
    index.remember("k4", "chat-4")
    kept = ConversationIndex(tmp_path / "index.json")
    assert [kept.find(f"k{n}") for n in range(5)] == [None, "chat-1", None, "chat-3", "chat-4"]
