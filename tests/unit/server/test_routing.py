"""The status of an error reply follows the error's type, never its words."""

from __future__ import annotations

from helpers.errors import NotFound, PromptError, UserError
from server.routes.routing import status_for


def test_not_found_is_a_404_whatever_it_says():
    assert status_for(NotFound("no memory 'x' in this area")) == 404
    assert status_for(NotFound("no chat with id 'x'")) == 404


def test_other_user_errors_are_400_even_when_they_read_like_a_missing_chat():
    assert status_for(UserError("no chat with id 'x'")) == 400
    assert status_for(PromptError("prompt file 'a.md' not found")) == 400
