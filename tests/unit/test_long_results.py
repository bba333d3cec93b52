"""Long results on disk and §§include: numbering, expansion, confinement."""

from __future__ import annotations

import os

import pytest

from helpers import long_results
from helpers.long_results import expand_includes, include_roots, save_long_result


def test_numbers_are_never_reused(usr_dir):
    first = save_long_result("chat1", "one")
    second = save_long_result("chat1", "two")
    assert (first.name, second.name) == ("1.txt", "2.txt")
    second.unlink()
    first.unlink()
    third = save_long_result("chat1", "three")  # as after a restart: only the files remain
    assert third.name == "3.txt" and third.read_text() == "three"
    assert third.parent == usr_dir / "chats" / "chat1" / "messages"


def test_a_lost_counter_falls_back_to_the_highest_file(usr_dir):
    save_long_result("c", "a")
    save_long_result("c", "b")
    (usr_dir / "chats" / "c" / "messages" / ".counter").write_text("garbage")
    assert save_long_result("c", "c").name == "3.txt"


def test_includes_expand_in_nested_arguments(usr_dir):
    path = save_long_result("c", "FULL TEXT")
    args = {"text": f"Here: §§include({path})", "items": [f"§§include( {path} )", 3]}
    assert expand_includes(args, include_roots("c")) == {
        "text": "Here: FULL TEXT",
        "items": ["FULL TEXT", 3],
    }


def test_relative_paths_start_at_the_chat_folder(usr_dir):
    save_long_result("c", "saved")
    assert expand_includes("§§include(messages/1.txt)", include_roots("c")) == "saved"


def test_the_work_folder_is_allowed(usr_dir):
    work = usr_dir / "workdir"
    work.mkdir()
    (work / "notes.md").write_text("notes")
    assert expand_includes(f"§§include({work / 'notes.md'})", include_roots("c")) == "notes"


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    return secret


def hostile_paths(usr_dir, outside):
    chat = usr_dir / "chats" / "c"
    (chat / "messages").mkdir(parents=True, exist_ok=True)
    link = chat / "messages" / "link.txt"
    if not link.exists():
        os.symlink(outside, link)
    return [
        str(outside),  # absolute, outside
        str(chat / ".." / ".." / ".." / outside.name),  # climbing out
        "../../secret.txt",  # relative climb
        str(link),  # a link inside pointing out
        "/etc/passwd",
        str(chat / "messages" / "missing.txt"),
        str(chat / "messages") + "/%2e%2e/secret.txt",  # encoded dots are just a name
        "bad\x00name",
    ]


def test_paths_outside_are_left_as_written_and_reported(usr_dir, outside):
    for raw in hostile_paths(usr_dir, outside):
        refused: list[str] = []
        text = f"§§include({raw})"
        assert expand_includes(text, include_roots("c"), refused.append) == text
        assert refused == [raw], raw


def test_no_include_means_no_change():
    args = {"text": "plain", "n": 1}
    assert expand_includes(args, []) == args
    assert not long_results.has_includes(args)
