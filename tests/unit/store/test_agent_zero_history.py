"""Agent Zero's saved history read as Cadre's: order, summaries, markers, bad shapes."""

from __future__ import annotations

import json

import pytest

from store.agent_zero.history import convert_history, shipped_prompts
from tests.support.agent_zero_usr import history, message, topic

RENDER = shipped_prompts()


def texts(raw: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in convert_history(raw, RENDER).output()]


def test_a_bulk_without_a_summary_keeps_its_topics_first_in_order():
    raw = history(
        bulks=[
            {"_cls": "Bulk", "summary": "merged", "records": [topic(), topic(), topic()]},
            {"_cls": "Bulk", "summary": "", "records": [
                topic(message(False, "one")),
                {"_cls": "Bulk", "summary": "", "records": [topic(message(False, "two"))]},
            ]},
        ],
        topics=[topic(message(True, "three"), summary="")],
        current=topic(message(False, "four")),
    )  # fmt: skip
    converted = convert_history(raw, RENDER)
    assert [b.topics for b in converted.bulks] == [3]
    assert [len(t.messages) for t in converted.topics] == [1, 1, 1]  # one, two, three
    assert texts(raw) == [("user", "merged\n\none\n\ntwo"), ("assistant", "three"),
                          ("user", "four")]  # fmt: skip


def test_what_a_model_cannot_read_is_left_and_the_rest_kept_as_text():
    raw = history(
        current=topic(
            message(False, [{"type": "text", "text": "look"}, {"type": "image_url"}]),
            message(False, {"raw_content": [{"type": "image_url"}]}),  # no preview: left
            message(False, {"tool_name": "x", "tool_result": "long"}, summary="cut short"),
            message(True, {"thoughts": ["t"], "tool_name": "response"}),
            message(False, {"custom": 1}),
        )
    )
    assert texts(raw) == [
        ("user", "look\n\ncut short"),
        ("assistant", '{"thoughts": ["t"], "tool_name": "response"}'),
        ("user", '{"custom": 1}'),
    ]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("{not json", "not JSON"),
        ("[1]", "not a JSON object"),
        (json.dumps({"topics": {}}), "topics are not a list"),
        (json.dumps({"current": {"messages": [{"content": "x"}]}}), "'ai' flag"),
    ],
)
def test_a_damaged_history_says_what_is_wrong(raw, words):
    with pytest.raises(ValueError, match=words):
        convert_history(raw, RENDER)


def test_no_history_is_an_empty_one():
    assert convert_history("", RENDER).output() == []
