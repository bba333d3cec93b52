"""Paths from outside stay in their folder: every escape form is refused with a reason."""

from __future__ import annotations

import os

import pytest

from helpers.confine import PathRefused, check_name, open_inside, resolve_inside

ESCAPES = [
    ("../secret.txt", "'..'"),
    ("notes/../../secret.txt", "'..'"),
    ("..", "'..'"),
    ("／..／secret", "'..'"),
    ("notes／secret", "look-alike slash"),
    ("．．/secret", "'..'"),  # fullwidth dots become '..' under NFKC
    ("%2e%2e/secret", "percent-encoded"),
    ("notes%2F..%2Fsecret", "percent-encoded"),
    ("..\\secret", "backslash"),
    ("notes\x00.txt", "control characters"),
    ("notes\n.txt", "control characters"),
    ("", "empty"),
    ("   ", "empty"),
]


@pytest.mark.parametrize(("raw", "reason"), ESCAPES)
def test_escape_forms_are_refused_by_name(raw, reason):
    with pytest.raises(PathRefused, match=reason):
        check_name(raw)


def test_plain_names_pass(tmp_path):
    for raw in ["a.txt", "notes/today.md", "100% done.txt", "café/menu.txt", ".hidden", "a..b"]:
        assert resolve_inside(raw, tmp_path) == (tmp_path / raw).resolve()


def test_absolute_paths_only_inside(tmp_path):
    assert resolve_inside(str(tmp_path / "x.txt"), tmp_path) == (tmp_path / "x.txt").resolve()
    with pytest.raises(PathRefused, match="outside the work folder"):
        resolve_inside("/etc/passwd", tmp_path)
    with pytest.raises(PathRefused, match="outside"):
        resolve_inside("~/.bashrc", tmp_path)


def test_symlinks_pointing_out_are_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dir").symlink_to(outside)
    (root / "inner.txt").write_text("fine")
    (root / "ok-link.txt").symlink_to(root / "inner.txt")
    for raw in ["link.txt", "dir/secret.txt", "dir/new.txt"]:
        with pytest.raises(PathRefused, match="outside"):
            resolve_inside(raw, root)
    assert resolve_inside("ok-link.txt", root) == (root / "inner.txt").resolve()


def test_a_link_swapped_in_after_the_check_is_caught_at_open(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    checked = resolve_inside("file.txt", root)  # does not exist yet: allowed
    checked.symlink_to(outside / "secret.txt")  # ...then an attacker plants a link
    with pytest.raises(PathRefused, match="outside"):
        open_inside(checked, os.O_RDONLY, [root])
    fd = open_inside(root / "new.txt", os.O_WRONLY | os.O_CREAT, [root])
    os.close(fd)
