"""A text told below the loop (helpers/told.py) reads, once rendered with the shipped prompt
files, as the words the model is meant to read, told parts nested in it included."""

from __future__ import annotations

from helpers.errors import RepairableException, RepairableTold
from helpers.files import BASE_DIR
from helpers.told import render_lines, told
from profiles.prompts import PromptLoader

PROMPTS = PromptLoader([BASE_DIR / "prompts"])


def test_told_parts_nested_in_a_told_text_are_rendered_first():
    sessions = [
        told("fw.code.session_name.md", own=True, owner=0, runtime="terminal", number=1),
        told("fw.code.session_name.md", own=False, owner=1, runtime="python", number=0),
    ]
    said = told("fw.code.too_many_sessions.md", count=2, sessions=sessions).render(PROMPTS.render)
    assert said == (
        "this chat already runs 2 code sessions, the most it may at once (each has its own"
        " processes, memory and scratch space): terminal session 1, agent 1's python session 0."
        ' Use one of them, or end one you no longer need with runtime "reset" and its session'
        " number"
    )


def test_lines_keep_data_as_it_is_and_render_what_is_told():
    parts = [told("fw.text_editor.lines.md", shown_as="f", start=1, last=1, total=1), "1 | x  "]
    assert render_lines(parts, PROMPTS.render) == "f: lines 1-1 of 1\n1 | x  "


def test_a_told_error_is_repairable_and_names_its_prompt_for_the_log():
    error = RepairableTold("fw.text_editor.missing.md", shown_as="a.txt")
    assert isinstance(error, RepairableException)
    assert str(error) == "fw.text_editor.missing.md {'shown_as': 'a.txt'}"
    assert error.told.render(PROMPTS.render) == "a.txt does not exist"
