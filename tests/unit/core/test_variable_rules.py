"""A chat's context variables: the names and values a chat may hold, and how changes apply."""

from __future__ import annotations

import pytest

from core.chat_migrations import migrate
from core.chat_record import ChatFile
from core.prompt.chat_variables import MAX_VALUE, MAX_VARIABLES, applied, check_change
from helpers.errors import UserError


def test_a_change_sets_and_removes_over_what_is_there() -> None:
    current = {"customer": "ACME", "tier": "gold"}
    after = applied(current, {"tier": None, "region": "EU", "customer": "Initech"})
    assert after == {"customer": "Initech", "region": "EU"}
    assert current == {"customer": "ACME", "tier": "gold"}  # swapped whole, not changed
    assert applied(current, {"region": "EU"}, replace=True) == {"region": "EU"}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"1st": "x"}, "'1st' is not allowed: use letters, digits and _"),
        ({"a-b": "x"}, "'a-b' is not allowed"),
        ({"": "x"}, "'' is not allowed"),
        ({"x" * 65: "x"}, "at most 64 characters"),
        ({"n": 3}, "the variable 'n' must be text, not int"),
        ({"n": "x" * (MAX_VALUE + 1)}, f"at most {MAX_VALUE:,}"),
        ({f"v{i}": "" for i in range(MAX_VARIABLES + 1)}, f"a chat holds at most {MAX_VARIABLES}"),
        (["customer"], "must be an object of names and texts"),
    ],
)
def test_what_is_refused_is_said_in_words(change: object, words: str) -> None:
    with pytest.raises(UserError, match=words.replace("(", r"\(")):
        check_change(change)


def test_none_is_refused_where_removal_is_not_offered() -> None:
    with pytest.raises(UserError, match="must be text, not NoneType"):
        check_change({"n": None}, removals=False)


def test_too_many_after_the_change_changes_nothing() -> None:
    full = {f"v{i}": "x" for i in range(MAX_VARIABLES)}
    with pytest.raises(UserError, match=f"would hold {MAX_VARIABLES + 1} variables"):
        applied(full, {"one_more": "x"})
    assert applied(full, {"v0": None, "one_more": "x"})["one_more"] == "x"


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    assert check_change({"n": "a\ud800b"}) == {"n": "a\ufffdb"}


def test_a_chat_file_from_before_variables_loads_with_none() -> None:
    document = {"version": 3, "id": "x", "created_at": 1, "agents": [{"number": 0, "profile": "p"}]}
    assert ChatFile.model_validate(migrate(document)).variables == {}
