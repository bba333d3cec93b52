"""The file panel's routes over the real Flask app: real files in a private usr/, the
page's CSRF token, a login where the test sets one."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from helpers.settings import Settings, save_settings


@pytest.fixture
def work(usr_dir: Path) -> Path:
    folder = usr_dir / "workdir"
    folder.mkdir(exist_ok=True)
    return folder


def files(*named: tuple[str, bytes]) -> dict[str, object]:
    return {"files": [(io.BytesIO(data), name) for name, data in named]}


def listing(http, path: str = "", **args: str) -> dict:
    response = http.get("/api/files/list", query_string={"path": path, **args})
    assert response.status_code == 200, response.json
    return response.json


def test_upload_several_files_then_list_preview_and_download(http, work):
    sent = files(("notes.md", b"# Plan\n\n<script>x</script>"), ("data.txt", b"a\nb\n"))
    response = http.post("/api/files/upload?path=", data=sent)
    assert response.status_code == 200, response.json
    assert response.json["saved"] == ["notes.md", "data.txt"]
    again = http.post("/api/files/upload", data=files(("data.txt", b"second")))
    assert again.json["saved"] == ["data-1.txt"]  # never over an existing file
    assert (work / "data.txt").read_bytes() == b"a\nb\n"

    shown = listing(http)
    assert [e["name"] for e in shown["entries"]] == ["data-1.txt", "data.txt", "notes.md"]
    assert shown["entries"][1] == {**shown["entries"][1], "kind": "file", "size": 4}
    assert shown["writable"] and shown["upload_limit"] == 100 * 1024 * 1024
    assert not list(work.glob(".upload-*"))

    markdown = http.get("/api/files/preview?path=notes.md").json
    assert markdown["kind"] == "markdown" and markdown["text"].startswith("# Plan")
    got = http.get("/api/files/download?path=data.txt")
    assert got.data == b"a\nb\n"
    assert got.headers["Content-Disposition"].startswith("attachment")
    assert "sandbox" in got.headers["Content-Security-Policy"]


def test_raw_serves_images_as_images_and_never_html(http, work):
    (work / "pics").mkdir()
    (work / "pics" / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\n....")
    (work / "page.html").write_text("<script>alert(1)</script>")
    image = http.get("/api/files/raw", query_string={"path": "pics/dot.png"})
    assert image.status_code == 200 and image.mimetype == "image/png"
    assert http.get("/api/files/preview?path=pics/dot.png").json == {
        "path": "pics/dot.png", "kind": "image", "size": 12,
    }  # fmt: skip
    page = http.get("/api/files/raw?path=page.html")
    assert page.mimetype == "text/plain"
    assert "sandbox" in page.headers["Content-Security-Policy"]
    (work / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert http.get("/api/files/preview?path=blob.bin").json["kind"] == "binary"


def test_an_upload_over_the_limit_is_refused_whole(http, work, monkeypatch):
    monkeypatch.setenv("CADRE_FILE_UPLOAD_LIMIT_MB", "1")
    small, big = ("ok.txt", b"fine"), ("big.bin", b"x" * (1024 * 1024))
    response = http.post("/api/files/upload", data=files(small, big))
    assert response.status_code == 413
    assert "more than the limit of 1.0 MB" in response.json["error"]
    assert "nothing was saved" in response.json["error"]
    assert sorted(p.name for p in work.iterdir()) == []  # not even the small one, no .part
    huge = http.post("/api/files/upload", data=files(("huge.bin", b"y" * (3 * 1024 * 1024))))
    assert huge.status_code == 413 and "Largest upload" in huge.json["error"]
    assert list(work.iterdir()) == []


def test_rename_new_folder_and_delete(http, work):
    (work / "a.txt").write_text("a")
    made = http.post("/api/files/folder", json={"path": "", "name": "reports"})
    assert made.json == {"path": "reports"} and (work / "reports").is_dir()
    moved = http.post("/api/files/rename", json={"path": "a.txt", "name": "b.txt"})
    assert moved.json == {"path": "b.txt"} and (work / "b.txt").read_text() == "a"
    (work / "reports" / "r.txt").write_text("r")
    taken = http.post("/api/files/rename", json={"path": "b.txt", "name": "reports"})
    assert taken.status_code == 400 and "already exists" in taken.json["error"]
    assert http.post("/api/files/rename", json={"path": "b.txt", "name": "x/y"}).status_code == 400

    assert http.post("/api/files/delete", json={"path": "reports"}).status_code == 200
    assert http.post("/api/files/delete", json={"path": "b.txt"}).status_code == 200
    assert list(work.iterdir()) == []
    (work / "reports").mkdir()
    folder = http.get("/api/files/download?path=reports")
    assert (
        folder.status_code == 400
        and folder.json["error"] == "reports is a folder: open it in the list"
    )
    (work / "reports").rmdir()
    gone = http.post("/api/files/delete", json={"path": "b.txt"})
    assert gone.status_code == 400 and "does not exist" in gone.json["error"]
    whole = http.post("/api/files/delete", json={"path": ""})
    assert whole.status_code == 400 and "itself cannot be changed" in whole.json["error"]


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("../settings.json", "goes up a folder"),
        ("a/../../x", "goes up a folder"),
        ("%2e%2e/x", "percent-encoded"),
        ("/etc/passwd", "absolute path"),
        ("out/secret.txt", "outside the work folder"),
        ("out", "outside the work folder"),
    ],
)
def test_paths_leading_out_are_refused_with_the_reason(http, work, tmp_path, path, words):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("not yours")
    (work / "out").symlink_to(elsewhere)
    for url in ("list", "preview", "raw", "download"):
        response = http.get(f"/api/files/{url}", query_string={"path": path})
        assert response.status_code == 400, url
        assert words in response.json["error"], url
    for url, extra in (("delete", {}), ("rename", {"name": "z"}), ("folder", {"name": "z"})):
        response = http.post(f"/api/files/{url}", json={"path": path, **extra})
        assert response.status_code == 400 and words in response.json["error"], url
    upload = http.post("/api/files/upload", query_string={"path": path}, data=files(("z", b"z")))
    assert upload.status_code == 400 and words in upload.json["error"]
    assert (elsewhere / "secret.txt").read_text() == "not yours"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["secret.txt"]


def test_a_link_out_is_listed_as_outside_and_a_hard_link_is_not_read(http, work, tmp_path):
    (tmp_path / "secret.txt").write_text("s")
    (work / "link.txt").symlink_to(tmp_path / "secret.txt")
    os.link(tmp_path / "secret.txt", work / "hard.txt")
    kinds = {e["name"]: e["kind"] for e in listing(http)["entries"]}
    assert kinds == {"hard.txt": "file", "link.txt": "outside"}
    hard = http.get("/api/files/download?path=hard.txt")
    assert hard.status_code == 400 and "hard link" in hard.json["error"]


def test_a_link_that_loops_is_listed_refused_and_deleted_never_a_500(http, work):
    """A link to itself (an agent can make one) made every route of its folder a 500."""
    (work / "loop").symlink_to("loop")
    kinds = {e["name"]: e["kind"] for e in listing(http)["entries"]}
    assert kinds == {"loop": "outside"}
    raw = http.get("/api/files/raw?path=loop")
    assert raw.status_code == 400 and "loop" in raw.json["error"]
    deleted = http.post("/api/files/delete", json={"path": "loop"})
    assert deleted.status_code == 200, deleted.json
    assert not (work / "loop").is_symlink()


def test_cadre_own_files_are_never_read_or_changed(http, usr_dir, monkeypatch):
    save_settings(Settings())
    monkeypatch.setenv("CADRE_WORK_DIR", str(usr_dir))  # a work folder holding usr/ itself
    read = http.get("/api/files/download?path=settings.json")
    # The work folder itself is refused at every use (helpers/exposure.py), before any file.
    assert read.status_code == 400 and "is inside usr/" in read.json["error"]
    for url, extra in (("delete", {}), ("rename", {"name": "x.json"})):
        response = http.post(f"/api/files/{url}", json={"path": "settings.json", **extra})
        assert response.status_code == 400 and "work_dir" in response.json["error"]
    assert (usr_dir / "settings.json").is_file()
    made = http.post("/api/files/folder", json={"name": "notes"})
    assert made.status_code == 400 and not (usr_dir / "notes").exists()


def test_a_name_starting_with_a_tilde_is_a_name_here(http, work):
    (work / "~draft.txt").write_text("draft")
    assert http.get("/api/files/preview?path=~draft.txt").json["text"] == "draft"
    home = http.get("/api/files/list?path=~")  # a name here too: never the home folder
    assert home.status_code == 400 and home.json["error"] == "~ does not exist"


def test_the_chat_folder_is_read_only(http, server, usr_dir):
    chat_id = server.app.extensions["cadre.chats"].new_chat().id
    folder = usr_dir / "chats" / chat_id / "attachments"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("attached")
    shown = listing(http, "attachments", root="chat", chat=chat_id)
    assert [e["name"] for e in shown["entries"]] == ["a.txt"] and not shown["writable"]
    where = {"root": "chat", "chat": chat_id}
    text = http.get("/api/files/preview", query_string={**where, "path": "attachments/a.txt"})
    assert text.json["text"] == "attached"
    refused = http.post("/api/files/delete", json={**where, "path": "attachments/a.txt"})
    assert refused.status_code == 400 and "read-only" in refused.json["error"]
    sent = http.post("/api/files/upload", query_string=where, data=files(("x.txt", b"x")))
    assert sent.status_code == 400 and "read-only" in sent.json["error"]
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"]
    unknown = http.get("/api/files/list", query_string={"root": "chat", "chat": "nope"})
    assert unknown.status_code == 400 and "open a chat first" in unknown.json["error"]


def test_the_panel_needs_a_login_and_the_csrf_token(server, monkeypatch, work):
    monkeypatch.setenv("CADRE_AUTH_LOGIN", "ada")
    monkeypatch.setenv("CADRE_AUTH_PASSWORD", "correct horse")
    client = server.app.test_client()
    token = client.get("/api/csrf").json["token"]
    assert client.get("/api/files/list").status_code == 401
    assert client.get("/api/files/raw?path=a.txt").status_code == 401
    sent = client.post("/login", json={"login": "ada", "password": "correct horse"},
                       headers={"X-CSRF-Token": token})  # fmt: skip
    assert sent.status_code == 200
    refused = client.post("/api/files/upload", data=files(("a.txt", b"a")))
    assert refused.status_code == 403 and "CSRF" in refused.json["error"]
    made = client.post("/api/files/folder", json={"name": "x"})
    assert made.status_code == 403
    assert list(work.iterdir()) == []
    assert client.get("/api/files/list").status_code == 200


def test_the_work_folder_says_whether_commands_run_sandboxed(http, work, usr_dir):
    save_settings(Settings(code_exec_bwrap="/nonexistent/cadre-test/bwrap"))
    status = listing(http)["sandbox"]
    assert status["setting"] == "auto" and status["confined"] is False
    assert "/nonexistent/cadre-test/bwrap" in status["fallback"]
    assert http.get("/api/settings?form=1").json["sandbox"] == status
    save_settings(Settings(code_exec_sandbox="none"))
    assert listing(http)["sandbox"]["fallback"] == ""
