"""The name a handed-over project takes in its heir's projects (store/handing_over.py): its
own when free, else one with the leaving user's name after it, always a plain folder name."""

from __future__ import annotations

from helpers.names import is_plain_name
from store.handing_over import free_name


def test_a_free_name_is_kept_and_a_taken_one_gets_the_leavers_name():
    assert free_name("trip", "ann", lambda name: False) == "trip"
    taken = {"trip", "trip-ann"}
    assert free_name("trip", "ann", taken.__contains__) == "trip-ann-2"


def test_the_name_stays_a_plain_folder_name_whatever_the_user_is_called():
    made = free_name("x" * 64, "ann.lovelace@example.org", lambda name: name == "x" * 64)
    assert is_plain_name(made) and len(made) == 64
    assert made.endswith("-ann-lovelace-example")
