"""One view of folders and files, and telling later whether any of it changed."""

from __future__ import annotations

import contextvars
import os
import time
from contextlib import nullcontext
from pathlib import Path

import pytest

from helpers import file_snapshot
from helpers.file_snapshot import snapshot


def backdate(*paths: Path, seconds: float = 3600) -> None:
    """Files as if written an hour ago: out of the racy window."""
    then = time.time() - seconds
    for path in paths:
        os.utime(path, (then, then))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "prompts"
    root.mkdir()
    (root / "a.md").write_text("alpha")
    (root / "b.md").write_text("beta")
    backdate(root / "a.md", root / "b.md", root)
    return root


def test_a_snapshot_lists_once_and_later_sees_what_changed(folder):
    with snapshot() as seen:
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}
        (folder / "c.md").write_text("gamma")
        # The same view for the whole block, however often it is asked.
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}
        assert file_snapshot.regular_file(folder / "c.md") is None
    assert not seen.unchanged()
    with snapshot():
        assert "c.md" in file_snapshot.folder_names(folder)
        assert file_snapshot.regular_file(folder / "c.md") is not None


def test_unchanged_while_nothing_changes(folder):
    with snapshot() as seen:
        stamp = file_snapshot.regular_file(folder / "a.md")
        assert (stamp.mtime_ns, stamp.size) == ((folder / "a.md").stat().st_mtime_ns, 5)
        assert file_snapshot.regular_file(folder / "missing.md") is None
    assert seen.unchanged()
    assert seen.unchanged()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda f: (f / "a.md").write_text("ALPHA"), id="edited in place"),
        pytest.param(lambda f: (f / "a.md").unlink(), id="removed"),
        pytest.param(lambda f: (f / "missing.md").write_text("now here"), id="added"),
        pytest.param(lambda f: os.replace(f / "b.md", f / "a.md"), id="replaced by rename"),
    ],
)
def test_any_change_to_what_was_seen_is_noticed(folder, change):
    with snapshot() as seen:
        file_snapshot.regular_file(folder / "a.md")
        file_snapshot.regular_file(folder / "missing.md")
    change(folder)
    assert not seen.unchanged()


def test_an_edit_that_keeps_mtime_and_size_is_still_noticed_by_the_racy_rule(folder):
    """A coarse clock can give an edit the same mtime; a fresh file is never trusted."""
    (folder / "a.md").write_text("alpha")  # written just now
    with snapshot() as seen:
        file_snapshot.regular_file(folder / "a.md")
    stamp = (folder / "a.md").stat()
    (folder / "a.md").write_text("ALPHA")
    os.utime(folder / "a.md", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert not seen.unchanged()


def test_other_inputs_count_too(folder):
    answers = iter([True, False])
    with snapshot() as seen:
        file_snapshot.folder_names(folder)
        seen.depends_on(lambda _subject: next(answers))
    assert seen.unchanged()
    assert not seen.unchanged()


def test_folders_files_and_missing_paths(folder):
    (folder / "sub").mkdir()
    for inside in (False, True):
        with snapshot() if inside else nullcontext():
            assert file_snapshot.is_folder(folder / "sub")
            assert not file_snapshot.is_folder(folder / "a.md")
            assert not file_snapshot.is_folder(folder / "nope")
            assert file_snapshot.regular_file(folder / "sub") is None
            assert file_snapshot.folder_names(folder / "nope") == frozenset()
            assert file_snapshot.folder_names(folder / "a.md") == frozenset()


def test_a_nested_snapshot_keeps_its_own_record(folder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    backdate(other)
    with snapshot() as outer:
        file_snapshot.folder_names(folder)
        with snapshot() as inner:
            file_snapshot.folder_names(other)
        assert file_snapshot.current() is outer
    (other / "new.md").write_text("x")
    assert not inner.unchanged()
    assert outer.unchanged()  # it never looked at `other`
    assert file_snapshot.current() is None


def test_the_programs_own_folders_are_read_but_not_checked_again(folder, tmp_path, monkeypatch):
    """Shipped prompts change only with a new version of Cadre, which is a restart."""
    monkeypatch.setattr(file_snapshot, "_PROGRAM_PREFIXES", (f"{folder}{os.sep}",))
    user = tmp_path / "user"
    user.mkdir()
    backdate(user)
    with snapshot() as seen:
        assert file_snapshot.regular_file(folder / "a.md") is not None
        assert file_snapshot.folder_names(user) == frozenset()
    (folder / "a.md").write_text("a new version")
    assert seen.unchanged()
    (user / "x.md").write_text("a user's file")
    assert not seen.unchanged()


def test_a_link_to_nowhere_or_to_itself_is_simply_not_there(folder):
    (folder / "loop.md").symlink_to("loop.md")
    (folder / "dangling.md").symlink_to("nowhere.md")
    for block in (nullcontext(), snapshot()):
        with block:
            assert file_snapshot.regular_file(folder / "loop.md") is None
            assert file_snapshot.regular_file(folder / "dangling.md") is None
            assert not file_snapshot.is_folder(folder / "loop.md")


def test_an_edit_that_puts_back_the_old_mtime_and_size_is_noticed(folder):
    """As `cp -a` or `rsync -a` over a file do: the change time still tells."""
    with snapshot() as seen:
        file_snapshot.regular_file(folder / "a.md")
    before = (folder / "a.md").stat()
    (folder / "a.md").write_text("ALPHA")
    os.utime(folder / "a.md", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (folder / "a.md").stat().st_mtime_ns == before.st_mtime_ns
    assert not seen.unchanged()


def test_work_started_inside_a_snapshot_reads_afresh_once_the_block_has_ended(folder):
    with snapshot():
        inside = contextvars.copy_context()  # what a task or a thread started here holds
        assert inside.run(file_snapshot.current) is not None
    assert inside.run(file_snapshot.current) is None
    (folder / "c.md").write_text("gamma")
    assert "c.md" in inside.run(file_snapshot.folder_names, folder)


def test_a_file_written_just_now_is_not_settled(folder):
    (folder / "new.md").write_text("x")
    assert not file_snapshot.settled(file_snapshot.regular_file(folder / "new.md"))
    assert file_snapshot.settled(file_snapshot.regular_file(folder / "a.md"))


def test_one_look_checks_an_answer_once_a_step_and_the_next_step_sees_a_change(folder):
    """A step asks which plugins and profiles there are dozens of times: inside one look
    an answer is checked once; a change made meanwhile is seen at the next look."""
    answers: file_snapshot.Answers[frozenset[str]] = file_snapshot.Answers()
    worked: list[int] = []

    def work() -> frozenset[str]:
        worked.append(1)
        return file_snapshot.folder_names(folder)

    checks: list[int] = []
    real_stamp = file_snapshot.stamp_of

    def counted(path: str):
        checks.append(1)
        return real_stamp(path)

    with file_snapshot.one_look():
        assert answers.get("k", work) == {"a.md", "b.md"}
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}
        (folder / "c.md").write_text("gamma")
        backdate(folder / "c.md", folder)  # a change the stamps would show at once
        file_snapshot.stamp_of = counted
        try:
            for _ in range(10):
                assert answers.get("k", work) == {"a.md", "b.md"}  # the step's own view
            assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}
        finally:
            file_snapshot.stamp_of = real_stamp
    assert checks == [] and worked == [1]
    with file_snapshot.one_look():
        assert answers.get("k", work) == {"a.md", "b.md", "c.md"}  # the next step
    assert answers.get("k", work) == {"a.md", "b.md", "c.md"} and worked == [1, 1]


def test_a_listing_outside_a_step_is_fresh_each_time_and_a_closed_look_is_not_used(folder):
    assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}
    (folder / "c.md").write_text("gamma")
    assert file_snapshot.folder_names(folder) == {"a.md", "b.md", "c.md"}
    # A task started inside a step keeps the step's context after the step ended.
    with file_snapshot.one_look():
        kept = contextvars.copy_context()
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md", "c.md"}
    (folder / "d.md").write_text("delta")
    names = kept.run(file_snapshot.folder_names, folder)
    assert names == {"a.md", "b.md", "c.md", "d.md"}
    assert kept.run(file_snapshot.current_look) is None


def test_a_look_older_than_its_time_is_let_go_so_a_step_that_waited_looks_again(
    folder, monkeypatch
):
    """A step that waits (a pause, a model's reply, an approval) must see a plugin switched
    off meanwhile before its tool call: the look stands for LOOK_SECONDS at most."""
    monkeypatch.setattr(file_snapshot, "LOOK_SECONDS", 0.05)
    with file_snapshot.one_look():
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}
        (folder / "c.md").write_text("gamma")
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md"}  # the step's view
        time.sleep(0.06)  # the step waited
        assert file_snapshot.current_look() is None
        assert file_snapshot.folder_names(folder) == {"a.md", "b.md", "c.md"}
