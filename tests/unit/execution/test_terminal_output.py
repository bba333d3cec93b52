"""Terminal output made readable, questions recognised, readiness markers found."""

from __future__ import annotations

import pytest

from execution.terminal_output import Marker, asks_question, clean, shown


def test_escape_codes_progress_bars_and_backspaces_are_cleaned():
    assert clean("\x1b[1;31mred\x1b[0m plain") == "red plain"
    assert clean("\x1b]0;window title\x07after") == "after"
    assert clean("10%\r55%\r100%\r\nnext") == "100%\nnext"
    assert clean("abX\bc") == "abc"
    assert clean("bell\x07 null\x00 tab\tok") == "bell null tab\tok"


@pytest.mark.parametrize(
    "tail",
    ["Proceed? [y/N] ", "Overwrite (yes/no)", "[sudo] password for ada: ", "Enter passphrase: ",
     "Press ENTER to continue", "Your name? ", ">>> ", "Please enter a value: "],
)  # fmt: skip
def test_questions_are_recognised(tail):
    assert asks_question("some output\n" + tail)


@pytest.mark.parametrize("tail", ["Downloading 45%", "done.", "", "building target: app"])
def test_plain_output_is_not_a_question(tail):
    assert not asks_question("output\n" + tail)


def test_markers_are_found_and_removed():
    marker = Marker("ab12")
    assert marker.find("out\n__CADRE_READY_ab12_0__ ") == ("out\n", 0)
    assert marker.find("x__CADRE_READY_ab12_127__") == ("x", 127)
    assert marker.find("__CADRE_READY_other_0__") == ("__CADRE_READY_other_0__", None)
    assert shown("partial __CADRE_READY_ab") == "partial "
