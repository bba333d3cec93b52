"""The OpenAI wire: messages read as role and text, the conversation's key, errors."""

from __future__ import annotations

import pytest

from server.apis.openai_compat.wire import (
    OpenAIError,
    Turn,
    conversation_key,
    parse_request,
    split_last,
    turns,
)


def read(*messages: dict) -> list[Turn]:
    return turns(parse_request({"model": "cadre", "messages": list(messages)}))


def test_text_parts_are_joined_and_roles_normalised():
    found = read(
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None},
    )
    assert found == [Turn("system", "Be brief."), Turn("user", "a\nb"), Turn("assistant", "")]


def test_the_key_ignores_line_endings_and_outer_blanks_but_not_the_model():
    one = read({"role": "user", "content": "hi\r\nthere  "})
    two = read({"role": "user", "content": "  hi\nthere"})
    assert conversation_key("cadre", one) == conversation_key("cadre", two)
    assert conversation_key("cadre", one) != conversation_key("cadre/researcher", one)


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"role": "assistant", "content": "x"}], "no user message"),
        ([{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}], "last message"),
        ([{"role": "user", "content": "   "}], "empty"),
        ([{"role": "user", "content": "x" * 200_001}], "longer than"),
    ],
)
def test_a_conversation_without_a_last_user_message_is_refused(messages, says):
    with pytest.raises(OpenAIError, match=says) as refused:
        split_last(read(*messages))
    assert refused.value.status == 400 and refused.value.body()["error"]["param"] == "messages"


def test_a_bad_field_is_named():
    with pytest.raises(OpenAIError, match="stream: Input should be a valid boolean") as bad:
        parse_request({"model": "cadre", "messages": [{"role": "user"}], "stream": "often"})
    assert bad.value.param == "stream" and bad.value.status == 400
