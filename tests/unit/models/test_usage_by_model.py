"""A chat's usage by the model that answered: summed, kept in the saved chat, read back."""

from __future__ import annotations

import pytest

from core.chat_record import AgentRecord
from models.llm import Usage, priced


def call(model: str, prompt: int, completion: int) -> Usage:
    return priced(model, Usage(prompt_tokens=prompt, completion_tokens=completion, calls=1))


def test_calls_are_summed_by_the_model_that_answered():
    total = Usage()
    total.add(call("openai/gpt-4.1", 100, 10))
    total.add(call("openai/gpt-4.1-mini", 50, 5))
    total.add(call("openai/gpt-4.1-mini", 50, 5))
    assert total.calls == 3 and total.prompt_tokens == 200
    mini = total.models["openai/gpt-4.1-mini"]
    assert (mini.calls, mini.prompt_tokens, mini.completion_tokens) == (2, 100, 10)
    assert total.cost == pytest.approx(sum(part.cost for part in total.models.values()))
    assert total.models["openai/gpt-4.1"].cost > mini.cost > 0
    # A sum added to another (a subordinate's usage into its chat's) keeps the split.
    chat = Usage()
    chat.add(total)
    assert chat.to_dict()["models"] == total.to_dict()["models"]


def test_the_split_is_saved_and_read_back():
    total = Usage()
    total.add(call("openai/gpt-4.1", 100, 10))
    record = AgentRecord(number=0, profile="agent0", usage=total.to_dict())
    again = Usage.from_dict(AgentRecord.model_validate_json(record.model_dump_json()).usage)
    assert again.to_dict() == total.to_dict()
    assert Usage.from_dict({"calls": 2}).models == {}  # a chat saved before: no split
