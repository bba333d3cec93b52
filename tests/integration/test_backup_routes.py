"""Backups from the page: download, upload and preview, restore into a running Cadre.

A restore must not be undone by the chats this Cadre has open: after it, the
chats are the backup's (read again from disk), the old ones are never saved
again, and while a chat runs the restore is refused with nothing changed.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile

import pytest

from store import persist_chat
from store.backup.parts import default_parts
from store.chats import ChatManager
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply, model_is

KEY = {"X-API-Key": "api-secret"}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch, llm):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    llm.add_rule(model_is("util-model"), Reply("A chat"))  # chat names, off the script


def chats_of(server) -> ChatManager:
    return server.app.extensions["cadre.chats"]


def ask(http, text: str, chat_id: str | None = None, wait: bool = True) -> str:
    """The chat's id once it was answered and saved as ended (the answer comes a moment
    before the run's last save)."""
    body = {"message": text, "wait": wait, **({"context_id": chat_id} if chat_id else {})}
    response = http.post("/api/v1/message", json=body, headers=KEY)
    assert response.status_code == 200, response.json
    chat_id = response.json["context_id"]
    if wait:
        wait_for(lambda: not persist_chat.read_chat(chat_id).running, what="the last save")
    return chat_id


def answers(chat) -> list[str]:
    return [item.content for item in chat.log.items if item.type == "response"]


def users_on_disk(chat_id: str) -> list[str]:
    items = persist_chat.read_chat(chat_id).log["items"]
    return [item["content"] for item in items if item["type"] == "user"]


def upload(http, data: bytes):
    return http.post("/api/backup/preview", data={"archive": (io.BytesIO(data), "b.zip")},
                     content_type="multipart/form-data")  # fmt: skip


def test_a_restore_brings_back_the_backups_chats_and_the_open_ones_never_overwrite_them(
    http, server, llm, usr_dir
):
    llm.script(Reply(answer("Paris.")))
    kept = ask(http, "Capital of France?")
    download = http.post("/api/backup", json={"parts": ["chats", "skills"]})
    assert download.status_code == 200 and download.mimetype == "application/zip"
    assert "attachment" in download.headers["Content-Disposition"]
    backup = download.data
    with zipfile.ZipFile(io.BytesIO(backup)) as archive:
        assert f"usr/chats/{kept}/chat.json" in archive.namelist()

    llm.script(Reply(answer("About 2 million.")))
    ask(http, "Population?", kept)
    manager = chats_of(server)
    newer = manager.new_chat().id
    old = manager.get(kept)
    assert answers(old) == ["Paris.", "About 2 million."]

    previewed = upload(http, backup)
    assert previewed.status_code == 200, previewed.json
    rows = {row["name"]: row for row in previewed.json["parts"]}
    assert list(rows) == ["chats", "skills"] and previewed.json["secrets"] is False
    assert (rows["chats"]["backup_chats"], rows["chats"]["current_chats"]) == (1, 2)

    restored = http.post("/api/backup/restore", json={"token": previewed.json["token"]})
    assert restored.status_code == 200, restored.json
    assert restored.json["restored"] == ["chats", "skills"]

    back = manager.get(kept)
    assert back is not old and answers(back) == ["Paris."]
    assert newer not in {row["id"] for row in http.get("/api/v1/chats", headers=KEY).json["chats"]}
    manager.save_now(old)  # what an old chat's late save would do: nothing now
    saved = persist_chat.read_chat(kept).log["items"]
    assert [item["content"] for item in saved if item["type"] == "response"] == ["Paris."]
    assert "a backup is being restored" in old.runner.closed
    assert not list(usr_dir.glob(".backup-upload-*"))
    again = http.post("/api/backup/restore", json={"token": previewed.json["token"]})
    assert again.status_code == 404 and "upload it again" in again.json["error"]

    llm.script(Reply(answer("Still Paris.")))  # the restored chat goes on as usual
    ask(http, "Sure?", kept)
    assert answers(manager.get(kept)) == ["Paris.", "Still Paris."]


def test_a_restore_while_a_chat_runs_is_refused_and_changes_nothing(http, server, llm, usr_dir):
    llm.script(Reply(answer("first")))
    chat_id = ask(http, "hello")
    backup = http.post("/api/backup", json={"parts": ["chats"]}).data
    gate = threading.Event()
    llm.script(Reply(answer("held"), gate=gate))
    ask(http, "go on", chat_id, wait=False)
    chat = chats_of(server).get(chat_id)
    wait_for(lambda: chat.running, what="the run")
    try:
        wait_for(lambda: "go on" in users_on_disk(chat_id), what="the run's first save")
        previewed = upload(http, backup)
        refused = http.post("/api/backup/restore", json={"token": previewed.json["token"]})
        assert refused.status_code == 400 and "chats are running" in refused.json["error"]
        assert "go on" in users_on_disk(chat_id)  # the backup (before it) was not put in place
        assert not [p for p in usr_dir.iterdir() if p.name.startswith(".restore-")]
        assert chats_of(server).get(chat_id) is chat and not chat.runner.closed
    finally:
        gate.set()
    wait_for(lambda: not chat.running, what="the run's end")
    assert answers(chat) == ["first", "held"]


def test_a_hostile_upload_is_refused_and_nothing_waits_for_a_restore(http, usr_dir):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("cadre-backup.json", '{"format": "cadre-backup", "version": 1,'
                         ' "parts": ["chats"]}')  # fmt: skip
        archive.writestr("usr/chats/../../../escaped.txt", "x")
    refused = upload(http, buffer.getvalue())
    assert refused.status_code == 400 and "goes up a folder" in refused.json["error"]
    truncated = upload(http, buffer.getvalue()[:40])
    assert truncated.status_code == 400 and "not a readable zip" in truncated.json["error"]
    assert not list(usr_dir.glob(".backup-upload-*"))
    assert http.post("/api/backup", json={"parts": ["photos"]}).status_code == 400


def test_a_restored_task_list_replaces_the_one_the_scheduler_holds(http, server, usr_dir):
    """The scheduler keeps its tasks in memory: after a restore it holds the backup's,
    and its next change is written over those, not over the old list."""
    from scheduler.tasks import TaskSpec

    scheduler = server.app.extensions["cadre.scheduler"]
    kept = scheduler.create(TaskSpec(name="Kept", prompt="Report.", kind="adhoc"))
    backup = http.post("/api/backup", json={"parts": ["scheduler"]}).data
    scheduler.delete(kept.id)
    later = scheduler.create(TaskSpec(name="Later", prompt="Other.", kind="adhoc"))

    previewed = upload(http, backup)
    assert http.post("/api/backup/restore", json={"token": previewed.json["token"]}).json[
        "restored"] == ["scheduler"]  # fmt: skip
    assert [t.name for t in scheduler.store.all()] == ["Kept"]
    scheduler.create(TaskSpec(name="After", prompt="More.", kind="adhoc"))
    names = [t["name"] for t in http.get("/api/v1/tasks", headers=KEY).json["tasks"]]
    assert names == ["Kept", "After"]
    assert later.id not in (usr_dir / "scheduler" / "tasks.json").read_text()


def test_a_task_change_while_the_files_are_swapped_waits_for_the_restored_list(
    http, server, usr_dir, monkeypatch
):
    """A run that ends (or a tick that plans) right after the swap must not write the task
    list held in memory over the restored one before it is read again."""
    import server.routes.backups as routes
    from helpers.errors import NotFound
    from scheduler.tasks import TaskSpec

    scheduler = server.app.extensions["cadre.scheduler"]
    kept = scheduler.create(TaskSpec(name="Kept", prompt="Report.", kind="adhoc"))
    backup = http.post("/api/backup", json={"parts": ["scheduler"]}).data
    scheduler.delete(kept.id)
    later = scheduler.create(TaskSpec(name="Later", prompt="Other.", kind="adhoc"))
    real_restore = routes.restore_backup

    def record_a_result() -> None:
        try:
            scheduler.store.update(later.id, lambda t: t.model_copy(update={"last_result": "x"}))
        except NotFound:
            pass  # the restored list has no such task: as it should be

    def restore_then_a_run_ends(*args, **kwargs):
        result = real_restore(*args, **kwargs)
        writer = threading.Thread(target=record_a_result)
        writer.start()
        writer.join(0.5)  # at once, unless the scheduler holds still until the list is read
        return result

    monkeypatch.setattr(routes, "restore_backup", restore_then_a_run_ends)
    previewed = upload(http, backup)
    http.post("/api/backup/restore", json={"token": previewed.json["token"]})
    assert [t.name for t in scheduler.store.all()] == ["Kept"]
    assert later.id not in (usr_dir / "scheduler" / "tasks.json").read_text()


UNREADABLE = {
    "broken JSON": ({"data": "{not json", "content_type": "application/json"}, "not JSON"),
    "a list": ({"json": ["chats"]}, "a JSON object"),
    "null": ({"data": "null", "content_type": "application/json"}, "a JSON object"),
    "parts a string": ({"json": {"parts": "chats"}}, "parts: "),
    "a part a number": ({"json": {"parts": ["chats", 7]}}, "parts.1: "),
    "an unknown field": ({"json": {"part": ["chats"]}}, "part: "),
    "an unknown part": ({"json": {"parts": ["photos"]}}, "unknown part(s) photos"),
    "no part": ({"json": {"parts": []}}, "choose at least one part"),
    "a form": ({"data": {"parts": "chats"}}, "JSON"),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_a_backup_asked_for_with_a_body_it_cannot_read_is_a_400_that_says_why(
    http, usr_dir, case, caplog
):
    send, words = UNREADABLE[case]
    refused = http.post("/api/backup", **send)
    assert refused.status_code == 400 and refused.mimetype == "application/json"
    assert words in refused.json["error"], refused.json
    assert "backup" in caplog.text  # the server's log has a line for it


def test_a_backup_asked_for_without_a_body_has_the_default_parts(http):
    for send in ({}, {"json": {}}, {"data": "", "content_type": "application/json"}):
        made = http.post("/api/backup", **send)
        assert made.status_code == 200 and made.mimetype == "application/zip"
        with zipfile.ZipFile(io.BytesIO(made.data)) as archive:
            manifest = json.loads(archive.read("cadre-backup.json"))
        assert manifest["parts"] == default_parts() and manifest["secrets"] is False


def test_a_backup_whose_chat_is_nested_too_deeply_is_a_400_and_changes_nothing(http, llm, usr_dir):
    """100,000 levels of lists: Python's parser gives up (RecursionError), which was a 500."""
    llm.script(Reply(answer("kept")))
    kept = ask(http, "hello")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("cadre-backup.json", json.dumps({
            "format": "cadre-backup", "version": 1, "created_at": 1.0, "parts": ["chats"],
            "secrets": False}))  # fmt: skip
        archive.writestr("usr/chats/deep/chat.json", "[" * 100_000 + "]" * 100_000)
    previewed = upload(http, buffer.getvalue())
    assert previewed.status_code == 200, previewed.json
    refused = http.post("/api/backup/restore", json={"token": previewed.json["token"]})
    assert refused.status_code == 400, refused.json
    assert "chats/deep/chat.json" in refused.json["error"]
    assert "nested too deeply" in refused.json["error"]
    assert not (usr_dir / "chats" / "deep").exists()
    assert persist_chat.read_chat(kept).id == kept


def test_a_restored_usage_ledger_replaces_the_totals_the_server_holds(http, server, llm, usr_dir):
    """The usage ledger keeps its totals in memory and writes them behind the runs: after a
    restore of the accounts part it holds the backup's, and writes those, not its own, over
    the restored file."""
    ledger = server.usage

    def calls_today() -> int:
        return int(http.get("/api/usage").json["users"][0]["today"]["calls"])

    def named(chat_id: str) -> None:
        # The chat's name is asked of the utility model after its run: a call counted too,
        # which on a loaded machine came after the totals were read (2 == 1).
        wait_for(lambda: persist_chat.read_chat(chat_id).name == "A chat", what="its name")

    llm.script(Reply(answer("Paris.")))
    named(ask(http, "Capital of France?"))
    spent = calls_today()
    assert spent >= 1
    ledger.flush()  # as its timer does a second after a call
    backup = http.post("/api/backup", json={"parts": ["accounts"]}).data
    llm.script(Reply(answer("About 2 million.")))
    named(ask(http, "Population?"))
    assert calls_today() > spent

    previewed = upload(http, backup)
    restored = http.post("/api/backup/restore", json={"token": previewed.json["token"]})
    assert restored.json["restored"] == ["accounts"]
    assert calls_today() == spent
    ledger.close()  # what is pending, written as at a stop
    assert json.loads((usr_dir / "usage.json").read_text()) == json.loads(
        zipfile.ZipFile(io.BytesIO(backup)).read("usr/usage.json"))  # fmt: skip


def test_a_download_leaves_no_copy_behind_whatever_the_client_does(http, monkeypatch, tmp_path):
    """The zip is made in a folder of its own: it is gone once sent, even when the response
    is never closed (a client that stops reading; the test client here)."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    download = http.post("/api/backup", json={"parts": ["skills"]})
    assert download.status_code == 200 and zipfile.is_zipfile(io.BytesIO(download.data))
    assert list(scratch.iterdir()) == []
    assert int(download.headers["Content-Length"]) == len(download.data)
