"""valid_text: lone surrogates replaced, pairs joined, valid text untouched."""

from __future__ import annotations

from helpers.valid_text import valid_text, valid_value


def test_lone_halves_are_replaced_and_split_pairs_joined():
    assert valid_text("a\ud800b") == "a\ufffdb"
    assert valid_text("end \udfff") == "end \ufffd"
    assert valid_text("\ud83d\ude00") == "\U0001f600"  # a pair in two code points
    assert valid_text("caf\udce9") == "caf\ufffd"  # a byte PEP 383 kept from a file name


def test_valid_text_is_returned_as_it_is():
    for text in ("", "plain", "déjà vu 😀", "\ufffd"):
        assert valid_text(text) is text


def test_nested_data_is_made_valid_keys_included():
    value = {"k\ud800": ["x\udc00", {"n": 1, "t": "ok"}], "none": None}
    assert valid_value(value) == {"k\ufffd": ["x\ufffd", {"n": 1, "t": "ok"}], "none": None}


def test_is_valid_value_walks_any_depth_and_finds_a_lone_surrogate():
    from helpers.valid_text import is_valid_value

    deep: object = "x"
    for _ in range(5_000):  # deeper than Python's recursion limit
        deep = {"k": [deep]}
    assert is_valid_value(deep)
    assert not is_valid_value({"k": ["fine", {"\ud800": 1}]})  # a key too
    assert is_valid_value({"emoji": "\U0001f600", "n": 3})
