"""History: topics, output for the model, JSON round trip, token counts."""

from __future__ import annotations

import json

from core.prompt.history import Bulk, History, Topic
from models.tokens import count_tokens


def test_output_merges_same_roles_in_order():
    history = History()
    history.add_message(False, "question")
    history.add_message(True, "reply")
    history.add_message(False, "tool result")
    history.add_message(False, "warning")
    out = history.output()
    assert [(m.role, m.content) for m in out] == [
        ("user", "question"),
        ("assistant", "reply"),
        ("user", "tool result\n\nwarning"),
    ]


def test_new_topic_seals_only_a_non_empty_topic():
    history = History()
    history.new_topic()
    assert history.topics == []
    history.add_message(False, "one")
    history.new_topic()
    history.new_topic()
    assert len(history.topics) == 1 and history.current.messages == []


def test_summaries_stand_in_for_their_messages():
    history = History(
        bulks=[Bulk("long ago", topics=3)],
        topics=[Topic(summary="earlier work"), Topic()],
    )
    history.topics[1].messages = []
    history.add_message(False, "now")
    assert [m.content for m in history.output()] == ["long ago\n\nearlier work\n\nnow"]


def test_json_round_trip():
    history = History()
    history.add_message(False, "hello")
    history.add_message(True, '{"tool_name": "response"}')
    history.new_topic()
    history.add_message(False, "big result", file="messages/1.txt")
    history.bulks.append(Bulk("summary", topics=2))
    text = json.dumps(history.to_dict())
    again = History.from_dict(json.loads(text))
    assert again.to_dict() == history.to_dict()
    assert again.current.messages[0].file == "messages/1.txt"


def test_tokens_are_counted():
    history = History()
    message = history.add_message(False, "The quick brown fox jumps over the lazy dog.")
    assert message.tokens == count_tokens(message.content) == 10
    assert history.tokens == 10


def test_huge_texts_are_estimated_not_encoded():
    text = "x" * 1_000_000
    assert count_tokens(text) == 250_000  # estimated: 4 characters a token
