"""The file editor's routes over the real Flask app: open a text file, save it back with
the version it was loaded at, a conflict when it changed meanwhile, the size limit, binary
files refused, and every path leading out refused in words and in the log."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from server.routes import file_text
from server.routes.file_places import Place
from server.routes.file_text import EDIT_LIMIT


@pytest.fixture
def work(usr_dir: Path) -> Path:
    folder = usr_dir / "workdir"
    folder.mkdir(exist_ok=True)
    return folder


def opened(http, path: str) -> dict:
    response = http.get("/api/files/text", query_string={"path": path})
    assert response.status_code == 200, response.json
    return response.json


def save(http, path: str, text: str, version: str, **extra: object):
    return http.post("/api/files/save", json={"path": path, "text": text, "version": version,
                                              **extra})  # fmt: skip


def test_open_edit_and_save_keeps_the_mode_and_leaves_nothing_behind(http, work):
    (work / "src").mkdir()
    script = work / "src" / "run.py"
    script.write_text("print('hi')\n")
    script.chmod(0o750)
    loaded = opened(http, "src/run.py")
    assert loaded["text"] == "print('hi')\n" and loaded["size"] == 12
    assert loaded["limit"] == EDIT_LIMIT
    assert http.get("/api/files/list").json["edit_limit"] == EDIT_LIMIT

    saved = save(http, "src/run.py", "print('héllo')\r\n", loaded["version"])
    assert saved.status_code == 200, saved.json
    assert script.read_bytes() == "print('héllo')\r\n".encode()  # as sent: CRLF, UTF-8
    assert saved.json["version"] == opened(http, "src/run.py")["version"] != loaded["version"]
    assert saved.json == {**saved.json, "path": "src/run.py", "size": 17}
    assert oct(script.stat().st_mode & 0o777) == oct(0o750)
    assert sorted(p.name for p in script.parent.iterdir()) == ["run.py"]  # no .edit-*.part

    made = save(http, "new.md", "# New\n", "")  # "" : a file that does not exist yet
    assert made.status_code == 200 and (work / "new.md").read_text() == "# New\n"


def test_a_file_changed_or_deleted_meanwhile_is_a_conflict_until_overwritten(http, work, caplog):
    notes = work / "notes.md"
    notes.write_text("abc\n")
    loaded = opened(http, "notes.md")
    notes.write_text("xyz\n")  # an agent wrote it: same size, maybe the same mtime tick
    caplog.set_level(logging.WARNING, logger="server.routes.files")

    conflict = save(http, "notes.md", "mine\n", loaded["version"])
    assert conflict.status_code == 409
    assert "changed on disk after you opened it" in conflict.json["error"]
    assert "Reload" in conflict.json["error"] and "overwrite" in conflict.json["error"]
    assert conflict.json["current"] == opened(http, "notes.md")["version"]
    assert notes.read_text() == "xyz\n"
    assert "file panel refused POST /api/files/save (409)" in caplog.text

    forced = save(http, "notes.md", "mine\n", loaded["version"], force=True)
    assert forced.status_code == 200 and notes.read_text() == "mine\n"

    notes.unlink()
    gone = save(http, "notes.md", "again\n", forced.json["version"])
    assert gone.status_code == 409 and gone.json["current"] == ""
    assert "was deleted after you opened it" in gone.json["error"]
    assert not notes.exists()
    back = save(http, "notes.md", "again\n", forced.json["version"], force=True)
    assert back.status_code == 200 and notes.read_text() == "again\n"


def test_a_file_over_the_limit_or_not_text_is_not_opened(http, work):
    (work / "big.log").write_bytes(b"x" * (EDIT_LIMIT + 200_000))
    big = http.get("/api/files/text?path=big.log")
    assert big.status_code == 413
    assert big.json["error"] == (
        "big.log is larger than the 1.0 MB the editor opens: download it to change it"
        " with a program of your own"
    )
    (work / "small.txt").write_text("s")
    version = opened(http, "small.txt")["version"]
    too_long = save(http, "small.txt", "y" * (EDIT_LIMIT + 1), version)
    assert too_long.status_code == 413 and (work / "small.txt").read_text() == "s"

    for name, data in (("blob.bin", b"\x00\x01\x02"), ("latin.txt", b"caf\xe9\n")):
        (work / name).write_bytes(data)
        refused = http.get("/api/files/text", query_string={"path": name})
        assert refused.status_code == 415, name
        assert f"{name} is not a text file" in refused.json["error"]
        assert "download it" in refused.json["error"]
    folder = http.get("/api/files/text?path=")
    assert folder.status_code == 400 and "is a folder" in folder.json["error"]


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("../settings.json", "goes up a folder"),
        ("%2e%2e/x", "percent-encoded"),
        ("/etc/passwd", "absolute path"),
        ("out/secret.txt", "outside the work folder"),
    ],
)
def test_paths_leading_out_are_refused_in_words_and_in_the_log(
    http, work, tmp_path, caplog, path, words
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("not yours")
    (work / "out").symlink_to(elsewhere)
    caplog.set_level(logging.WARNING, logger="server.routes.files")
    read = http.get("/api/files/text", query_string={"path": path})
    assert read.status_code == 400 and words in read.json["error"]
    written = save(http, path, "mine", "", force=True)
    assert written.status_code == 400 and words in written.json["error"]
    for url, extra in (("rename", {"name": "z"}), ("folder", {"name": "z"}), ("new", {"name": "z"}),
                       ("delete", {})):  # fmt: skip
        response = http.post(f"/api/files/{url}", json={"path": path, **extra})
        assert response.status_code == 400 and words in response.json["error"], url
    sent = {"files": [(io.BytesIO(b"z"), "z.txt")]}
    upload = http.post("/api/files/upload", query_string={"path": path}, data=sent)
    assert upload.status_code == 400 and words in upload.json["error"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["secret.txt"]
    assert (elsewhere / "secret.txt").read_text() == "not yours"
    lines = [r.getMessage() for r in caplog.records if "file panel refused" in r.getMessage()]
    assert len(lines) == 7 and all(words in line for line in lines), lines


def test_a_hard_link_a_link_swap_and_the_chat_folder_are_never_written(
    http, server, work, tmp_path, usr_dir
):
    (tmp_path / "secret.txt").write_text("s")
    os.link(tmp_path / "secret.txt", work / "hard.txt")
    hard = save(http, "hard.txt", "mine", "", force=True)
    assert hard.status_code == 400 and "hard link" in hard.json["error"]
    assert (tmp_path / "secret.txt").read_text() == "s"

    # A link inside pointing inside is followed: its target is the file edited.
    (work / "real.txt").write_text("r")
    (work / "alias.txt").symlink_to(work / "real.txt")
    version = opened(http, "alias.txt")["version"]
    assert save(http, "alias.txt", "edited", version).status_code == 200
    assert (work / "real.txt").read_text() == "edited" and (work / "alias.txt").is_symlink()

    chat_id = server.app.extensions["cadre.chats"].new_chat().id
    folder = usr_dir / "chats" / chat_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.txt").write_text("attached")
    where = {"root": "chat", "chat": chat_id, "path": "a.txt"}
    assert http.get("/api/files/text", query_string=where).json["text"] == "attached"
    refused = http.post("/api/files/save", json={**where, "text": "x", "force": True})
    assert refused.status_code == 400 and "read-only" in refused.json["error"]
    assert (folder / "a.txt").read_text() == "attached"


@pytest.mark.parametrize(
    ("moment", "path", "words"),
    [
        ("version_of", "sub/a.txt", "nothing was saved"),  # after the version check
        ("check_change", "sub/deep/a.txt", "leads outside its folder"),  # before the open
    ],
)
def test_a_folder_swapped_for_a_link_during_a_save_is_not_written_through(
    http, work, tmp_path, monkeypatch, moment, path, words
):
    """The save opens the file's folder once, checks it through the descriptor, and reads
    and writes through that: a folder on the path swapped for a link to elsewhere while
    the save runs (an agent writes in the work folder too) leads nothing out, and the
    person is told in words."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (work / path).parent.mkdir(parents=True)
    (work / path).write_text("old\n")
    version = opened(http, path)["version"]
    swapped = []

    def swap_once(real, *args, **kwargs):
        found = real(*args, **kwargs)
        if not swapped:
            swapped.append(True)
            shutil.rmtree(work / "sub")
            (work / "sub").symlink_to(elsewhere)
        return found

    if moment == "version_of":
        real = file_text.version_of
        monkeypatch.setattr(file_text, "version_of", lambda data: swap_once(real, data))
    else:
        real = Place.check_change
        monkeypatch.setattr(Place, "check_change", lambda *a: swap_once(real, *a))
    # Before the open nothing is there to check a version against: an overwrite then.
    response = save(http, path, "mine\n", version, force=moment == "check_change")
    assert swapped and list(elsewhere.rglob("*.txt")) == [], response.json
    assert response.status_code == 400 and words in response.json["error"], response.json


def test_a_new_file_gets_the_mode_an_upload_gets(http, work):
    """A file the editor makes is private as an uploaded one is (not readable by others)."""
    sent = {"files": [(io.BytesIO(b"u"), "up.txt")]}
    assert http.post("/api/files/upload", data=sent).status_code == 200
    assert save(http, "made.txt", "m", "").status_code == 200
    modes = {oct((work / name).stat().st_mode & 0o777) for name in ("up.txt", "made.txt")}
    assert len(modes) == 1, modes


def test_a_save_far_over_the_limit_is_refused_before_its_body_is_read(http, work, caplog):
    """The body's size is checked from its length before it is read: a save of tens of
    megabytes is never held (nor parsed) to find it is over the editor's 1 MB."""
    (work / "a.txt").write_text("a")
    big = json.dumps({"path": "a.txt", "text": "x" * (40 * 1024 * 1024), "version": ""})
    caplog.set_level(logging.WARNING, logger="server.routes.files")
    response = http.post("/api/files/save", data=big, content_type="application/json")
    assert response.status_code == 413
    assert response.json["error"].startswith("the text is too large to save here: "), response.json
    assert "40.0 MB" in response.json["error"] and "1.0 MB" in response.json["error"]
    assert "file panel refused POST /api/files/save (413)" in caplog.text
    assert (work / "a.txt").read_text() == "a"
    # Within the body limit a text of escapes (6 bytes of JSON each) is read, then measured.
    escaped = json.dumps({"path": "a.txt", "text": "\x01" * EDIT_LIMIT, "version": ""})
    assert len(escaped) > 5 * EDIT_LIMIT
    response = http.post("/api/files/save", data=escaped, content_type="application/json")
    assert response.status_code == 409, response.json  # read: the version is checked


def test_a_new_file_is_made_empty_only_where_nothing_is(http, server, work, tmp_path, usr_dir):
    (work / "docs").mkdir()
    made = http.post("/api/files/new", json={"path": "docs", "name": " plan.md "})
    assert made.status_code == 200, made.json
    assert made.json == {"path": "docs/plan.md", "version": file_text.version_of(b""), "size": 0}
    assert (work / "docs" / "plan.md").read_bytes() == b""
    assert oct((work / "docs" / "plan.md").stat().st_mode & 0o777) == oct(file_text.NEW_FILE_MODE)
    assert save(http, "docs/plan.md", "# Plan\n", made.json["version"]).status_code == 200

    (tmp_path / "target.txt").write_text("not yours")
    (work / "docs" / "link.md").symlink_to(tmp_path / "target.txt")
    (work / "docs" / "dangling.md").symlink_to(tmp_path / "nowhere.txt")
    for name, words in (("plan.md", "docs/plan.md already exists"),
                        ("link.md", "docs/link.md already exists"),
                        ("dangling.md", "docs/dangling.md already exists"),
                        ("a/b.md", "give a name, not a path"), ("..", "give a name")):  # fmt: skip
        refused = http.post("/api/files/new", json={"path": "docs", "name": name})
        assert refused.status_code == 400 and words in refused.json["error"], (name, refused.json)
    assert (work / "docs" / "plan.md").read_text() == "# Plan\n"
    assert (tmp_path / "target.txt").read_text() == "not yours"
    assert not (tmp_path / "nowhere.txt").exists()  # a dangling link is not written through

    chat_id = server.app.extensions["cadre.chats"].new_chat().id
    (usr_dir / "chats" / chat_id).mkdir(parents=True, exist_ok=True)
    in_chat = http.post("/api/files/new", json={"root": "chat", "chat": chat_id, "name": "x.md"})
    assert in_chat.status_code == 400 and "read-only" in in_chat.json["error"]
    assert not (usr_dir / "chats" / chat_id / "x.md").exists()
