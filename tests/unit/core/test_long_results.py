"""Long results on disk and §§include: numbering, expansion, confinement."""

from __future__ import annotations

import os

import pytest

from core.prompt import long_results
from core.prompt.long_results import expand_includes, include_roots, save_long_result


def test_numbers_are_never_reused(usr_dir):
    folder = usr_dir / "chats" / "chat1"
    first = save_long_result("chat1", "one")
    second = save_long_result("chat1", "two")
    assert (first, second) == ("messages/1.txt", "messages/2.txt")
    (folder / second).unlink()
    (folder / first).unlink()
    third = save_long_result("chat1", "three")  # as after a restart: only the counter remains
    assert third == "messages/3.txt" and (folder / third).read_text() == "three"


def test_a_taken_number_is_skipped_not_overwritten(usr_dir):
    folder = usr_dir / "chats" / "c" / "messages"
    folder.mkdir(parents=True)
    (folder / "1.txt").write_text("another writer's")
    (folder / ".counter").write_text("0")
    assert save_long_result("c", "mine") == "messages/2.txt"
    assert (folder / "1.txt").read_text() == "another writer's"


def test_a_lost_counter_falls_back_to_the_highest_file(usr_dir):
    save_long_result("c", "a")
    save_long_result("c", "b")
    (usr_dir / "chats" / "c" / "messages" / ".counter").write_text("garbage")
    (usr_dir / "chats" / "c" / "messages" / ".counter").unlink()
    assert save_long_result("c", "c") == "messages/3.txt"


def test_includes_expand_in_nested_arguments(usr_dir):
    path = usr_dir / "chats" / "c" / save_long_result("c", "FULL TEXT")
    args = {"text": f"Here: §§include({path})", "items": [f"§§include( {path} )", 3]}
    assert expand_includes(args, include_roots("c")) == {
        "text": "Here: FULL TEXT",
        "items": ["FULL TEXT", 3],
    }


def test_relative_paths_start_at_the_chat_folder(usr_dir):
    assert save_long_result("c", "saved") == "messages/1.txt"
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
        "../../../secret.txt",  # relative climb, to the file that exists
        str(link),  # a link inside pointing out
        "/etc/passwd",
        str(chat / "messages" / "missing.txt"),
        str(chat / "messages") + "/%2e%2e/secret.txt",  # encoded dots are just a name
        "bad\x00name",
    ]


def test_paths_outside_are_left_as_written_and_reported(usr_dir, outside):
    (usr_dir / "workdir").mkdir()
    assert (usr_dir / "chats" / "c" / "../../../secret.txt").resolve() == outside
    for raw in hostile_paths(usr_dir, outside):
        refused: list[str] = []
        text = f"§§include({raw})"
        result = expand_includes(
            text, include_roots("c"), lambda p, _r, seen=refused: seen.append(p)
        )
        assert result == text and "TOP SECRET" not in result
        assert refused == [raw], raw


def test_the_refusal_says_why(usr_dir, outside):
    reasons = {}
    roots = include_roots("c")
    (usr_dir / "chats" / "c").mkdir(parents=True)
    big = usr_dir / "chats" / "c" / "big.txt"
    big.write_bytes(b"x" * (long_results.INCLUDE_LIMIT + 1))
    for raw in (str(outside), "missing.txt", str(big)):
        expand_includes(f"§§include({raw})", roots, lambda p, r: reasons.__setitem__(p, r))
    assert reasons[str(outside)] == "outside this chat's folder and the work folder"
    assert reasons["missing.txt"].startswith("cannot be opened")
    assert reasons[str(big)] == "larger than the include limit of 512 KB"


def test_a_configured_work_folder_is_allowed(usr_dir, tmp_path):
    elsewhere = tmp_path / "projects-work"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("from the work folder")
    roots = include_roots("c", str(elsewhere))
    assert expand_includes("§§include(a.txt)", roots) == "from the work folder"


def test_no_include_means_no_change():
    args = {"text": "plain", "n": 1}
    assert expand_includes(args, []) == args
    assert not long_results.has_includes(args)
