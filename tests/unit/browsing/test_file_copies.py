"""The copies a local page's parts are read from: one per content, gone after a while."""

from __future__ import annotations

import browsing.file_copies as file_copies
from browsing.file_copies import FileCopies


def test_copies_are_shared_by_content_and_go_when_unused(tmp_path, monkeypatch):
    copies = FileCopies(tmp_path / "files")
    style = copies.keep(b"p { color: red }", "file:///work/site/style.css?v=2")
    again = copies.keep(b"p { color: red }", "file:///work/other/style.css")
    odd = copies.keep(b"data", "file:///work/a.b%2Fc%20d")  # no suffix a type guess could use
    assert style == again and style.suffix == ".css" and style.read_bytes() == b"p { color: red }"
    assert odd.suffix == "" and odd.parent == tmp_path / "files"
    assert sorted(p.name for p in (tmp_path / "files").iterdir()) == sorted([style.name, odd.name])
    monkeypatch.setattr(file_copies, "KEPT_FOR", 0.0)  # every copy now unused long enough
    fresh = copies.keep(b"new", "file:///work/new.js")
    assert [p.name for p in (tmp_path / "files").iterdir()] == [fresh.name]
    monkeypatch.setattr(file_copies, "KEPT_FOR", 60.0)
    monkeypatch.setattr(file_copies, "BYTES_KEPT", 5)  # past the bound, the least recent go
    last = copies.keep(b"12345", "file:///work/last.js")
    assert [p.name for p in (tmp_path / "files").iterdir()] == [last.name]
    copies.clear()
    assert not (tmp_path / "files").exists()
