"""Context variables as the API, the OpenAI endpoint and the editor's route receive them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from server.apis.openai_compat import wire as openai_wire
from server.routes.chat_variables import Variables
from server.routes.payloads import ApiMessage, problem


def refusal(model, data: dict) -> str:
    with pytest.raises(ValidationError) as err:
        model.model_validate(data)
    return problem(err.value)


def test_the_api_takes_texts_and_nulls_and_says_what_it_refuses() -> None:
    data = ApiMessage.model_validate({"message": "hi", "context": {"a": "1", "b": None}})
    assert data.context == {"a": "1", "b": None}
    assert ApiMessage.model_validate({"message": "hi"}).context is None
    assert refusal(ApiMessage, {"message": "hi", "context": {"a b": "1"}}) == (
        "context: the variable name 'a b' is not allowed: use letters, digits and _, "
        "not starting with a digit, at most 64 characters"
    )
    assert refusal(ApiMessage, {"message": "hi", "context": {"n": ["x"]}}) == (
        "context: the variable 'n' must be text, not list"
    )


def test_the_editor_sends_texts_only() -> None:
    assert Variables.model_validate({"variables": {"a": "1"}}).variables == {"a": "1"}
    assert refusal(Variables, {"variables": {"a": None}}) == (
        "variables: the variable 'a' must be text, not NoneType"
    )


def test_openai_metadata_is_checked_as_variables() -> None:
    body = {"model": "cadre", "messages": [{"role": "user", "content": "hi"}]}
    assert openai_wire.parse_request({**body, "metadata": {"a": "1"}}).metadata == {"a": "1"}
    with pytest.raises(openai_wire.OpenAIError) as err:
        openai_wire.parse_request({**body, "metadata": {"9": "x"}})
    assert err.value.status == 400 and err.value.param == "metadata"
    assert str(err.value).startswith("metadata: the variable name '9' is not allowed")
