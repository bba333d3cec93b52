"""Line-range edits: applied bottom-up, line endings kept, bad ranges refused with a reason."""

from __future__ import annotations

import pytest

from helpers.errors import RepairableTold
from helpers.files import BASE_DIR
from helpers.text_files import Edit, FileReads, apply_edits, show_spans
from helpers.text_files import load as load_file
from helpers.text_files import read_range as read_parts
from helpers.told import render_lines
from profiles.prompts import PromptLoader

FIVE = b"one\ntwo\nthree\nfour\nfive\n"
#: The shipped prompt files, which say what the module below tells (helpers/told.py).
PROMPTS = PromptLoader([BASE_DIR / "prompts"])


class Refused(Exception):
    """A `RepairableTold` rendered as the model reads it."""


def said(call, *args, **kwargs):
    """`call`'s result, or the refusal it raised, rendered with the shipped prompt files."""
    try:
        return call(*args, **kwargs)
    except RepairableTold as exc:
        raise Refused(exc.told.render(PROMPTS.render)) from exc


def read_range(*args) -> str:
    return render_lines(said(read_parts, *args), PROMPTS.render)


def load(*args, **kwargs) -> bytes:
    return said(load_file, *args, **kwargs)


def edit(a: int, b: int, content: str = "") -> Edit:
    return Edit(line_from=a, line_to=b, content=content)


def test_several_edits_use_the_numbers_as_read():
    text, spans = apply_edits(FIVE, [edit(4, 4, "FOUR"), edit(2, 2, "TWO\nTWO-B")], "f")
    assert text == "one\nTWO\nTWO-B\nthree\nFOUR\nfive\n"
    assert spans == [(2, 3), (5, 5)]  # numbered as the file now is
    assert show_spans(text, spans[:1]) == "1 | one\n2 | TWO\n3 | TWO-B\n4 | three\n5 | FOUR"


def test_insert_delete_and_append():
    assert apply_edits(FIVE, [edit(1, 0, "zero")], "f")[0].startswith("zero\none\n")
    assert apply_edits(FIVE, [edit(2, 3)], "f")[0] == "one\nfour\nfive\n"
    assert apply_edits(FIVE, [edit(6, 5, "six")], "f")[0].endswith("five\nsix\n")


def test_windows_line_endings_are_kept():
    text, _ = apply_edits(b"a\r\nb\r\nc\r\n", [edit(2, 2, "B\nB2")], "f")
    assert text == "a\r\nB\r\nB2\r\nc\r\n"


def test_appending_after_a_last_line_without_newline_keeps_them_apart():
    assert apply_edits(b"a\nb", [edit(3, 2, "c")], "f")[0] == "a\nb\nc\n"


@pytest.mark.parametrize(
    ("edits", "reason"),
    [
        ([edit(2, 3, "x"), edit(3, 4, "y")], "overlap; merge them"),
        ([edit(2, 4, "x"), edit(3, 3, "y")], "overlap"),
        ([edit(5, 7, "x")], "past the end"),
        ([edit(9, 8, "x")], "past the end"),
        ([edit(4, 2, "x")], "before line_from"),
    ],
)
def test_bad_edits_are_refused(edits, reason):
    with pytest.raises(Refused, match=reason):
        said(apply_edits, FIVE, edits, "f")


def test_reading_ranges_and_limits(tmp_path):
    assert read_range(FIVE, "f", 2, 3) == "f: lines 2-3 of 5\n2 | two\n3 | three"
    assert read_range(b"", "f", None, None) == "f is empty."
    with pytest.raises(Refused, match="has 5 lines"):
        read_range(FIVE, "f", 9, None)
    big = "".join(f"line {n} " + "x" * 90 + "\n" for n in range(1, 2001)).encode()
    shown = read_range(big, "big", None, None)
    assert "of 2000" in shown and "read on with line_from" in shown and len(shown) < 45_000
    (tmp_path / "bin").write_bytes(b"\x7fELF\x00\x00")
    with pytest.raises(Refused, match="binary"):
        load(tmp_path / "bin", "bin", [tmp_path])
    with pytest.raises(Refused, match="does not exist"):
        load(tmp_path / "nope", "nope", [tmp_path])
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert load(tmp_path / "latin1.txt", "l", [tmp_path])  # readable...
    with pytest.raises(Refused, match="not UTF-8 text"):
        load(tmp_path / "latin1.txt", "l", [tmp_path], utf8=True)  # ...but never patched


def test_reads_remember_what_was_seen(tmp_path):
    reads = FileReads()
    reads.record(tmp_path / "f", FIVE)
    assert reads.matches(tmp_path / "f", FIVE)
    assert not reads.matches(tmp_path / "f", FIVE + b"six\n")
    assert not reads.matches(tmp_path / "g", FIVE)
