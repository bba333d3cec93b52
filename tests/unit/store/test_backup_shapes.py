"""Backups whose files take a shape usr/ cannot live with, or whose manifest lies.

A zip may hold `usr/settings.json/x`: restored, `settings.json` would be a
folder and Cadre could not read its settings again (nor its login key, nor
its chats when `chats` comes back as a file). Each such backup is refused,
with a clear reason and nothing changed, never a crash.
"""

from __future__ import annotations

import json
import sqlite3
import stat
import zipfile
from pathlib import Path

import pytest

from store.backup.check import BackupRefused, Limits
from store.backup.cli import main as cli
from store.backup.restore import preview, restore_backup
from tests.support.backup_files import lived_in, tree

ROOMY = Limits(max_bytes=50 * 2**20, max_files=1000)
ALL = ["chats", "settings", "projects", "memory", "scheduler", "knowledge", "secrets"]


def _zip(path: Path, entries: dict[str, bytes], created_at: object = 1.0) -> Path:
    manifest = {"format": "cadre-backup", "version": 1, "created_at": created_at,
                "parts": ALL, "secrets": True}  # fmt: skip
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cadre-backup.json", json.dumps(manifest))
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


SHAPES = {
    "settings as a folder": ("usr/settings.json/x", ["settings"]),
    "login key as a folder": ("usr/secret_key/x", ["secrets"]),
    "conversations as a folder": ("usr/openai_conversations.json/x", ["chats"]),
    "chats as a file": ("usr/chats", ["chats"]),
    "memory as a file": ("usr/memory", ["memory"]),
    "projects as a file": ("usr/projects", ["projects"]),
}


@pytest.mark.parametrize("case", list(SHAPES))
def test_a_file_where_usr_has_a_folder_or_back_is_refused_with_nothing_changed(
    case, usr_dir, tmp_path
):
    lived_in(usr_dir)
    before = tree(usr_dir)
    name, parts = SHAPES[case]
    archive = _zip(tmp_path / "b.zip", {name: b"x"})
    with pytest.raises(BackupRefused, match="cannot be"):
        restore_backup(archive, parts, ROOMY)
    assert tree(usr_dir) == before
    assert (usr_dir / "settings.json").is_file() and (usr_dir / "chats").is_dir()


@pytest.mark.parametrize("name", ["usr/chats/c9/chat.json/x", "usr/scheduler/tasks.json/x"])
def test_a_folder_where_a_json_file_belongs_is_refused_not_a_crash(name, usr_dir, tmp_path):
    lived_in(usr_dir)
    before = tree(usr_dir)
    archive = _zip(tmp_path / "b.zip", {name: b"{}"})
    with pytest.raises(BackupRefused, match="damaged"):
        restore_backup(archive, ["chats", "scheduler"], ROOMY)
    assert tree(usr_dir) == before


@pytest.mark.parametrize("created_at", ["yesterday", [1], 1e300, -1e20, True])
def test_a_manifest_with_a_date_that_is_no_date_is_refused_not_a_crash(
    created_at, usr_dir, tmp_path, capsys
):
    archive = _zip(tmp_path / "b.zip", {"usr/chats/c1/chat.json": b"{}"}, created_at)
    with pytest.raises(BackupRefused, match="created_at"):
        preview(archive, ROOMY)
    assert cli(["restore", str(archive), "--preview"]) == 2  # said, not a traceback
    assert "created_at" in capsys.readouterr().err


def test_a_sound_sqlite_file_that_is_not_a_memory_database_is_refused(usr_dir, tmp_path):
    """It passed SQLite's own check, and then the Memory panel failed (500) on every look."""
    lived_in(usr_dir)
    before = tree(usr_dir)
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE memories (x)")
    db.execute("INSERT INTO memories VALUES (1)")
    db.commit()
    db.close()
    archive = _zip(tmp_path / "b.zip", {"usr/memory/default/memory.db": other.read_bytes()})
    with pytest.raises(BackupRefused, match="not a memory database"):
        restore_backup(archive, ["memory"], ROOMY)
    assert tree(usr_dir) == before


@pytest.mark.parametrize("name", ["cadre-backup.json", "usr/settings.json"])
def test_a_manifest_or_settings_too_big_to_be_real_is_refused_before_it_is_read(
    name, usr_dir, tmp_path
):
    """Both are read whole into memory: 4 GB of spaces (a few MB zipped) must not be."""
    archive = tmp_path / "b.zip"
    manifest = {"format": "cadre-backup", "version": 1, "created_at": 1.0,
                "parts": ["settings"], "secrets": False}  # fmt: skip
    padded = json.dumps(manifest if name == "cadre-backup.json" else {}) + " " * 17 * 2**20
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr(name, padded)
        if name != "cadre-backup.json":
            out.writestr("cadre-backup.json", json.dumps(manifest))
    with pytest.raises(BackupRefused, match="too large"):
        preview(archive, ROOMY)


@pytest.mark.parametrize("mode", [0o000, 0o444, 0o666, 0o4777])
def test_restored_files_are_the_owners_to_read_and_write_and_no_one_elses_to_write(
    mode, usr_dir, tmp_path
):
    """A zip says each file's mode: 0o444 made a restored chat read-only (its next save
    failed), 0o000 unreadable, 0o666 writable by every user of the machine."""
    archive = tmp_path / "b.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("cadre-backup.json", json.dumps({
            "format": "cadre-backup", "version": 1, "created_at": 1.0, "parts": ["chats"],
            "secrets": False}))  # fmt: skip
        info = zipfile.ZipInfo("usr/chats/c1/chat.json")
        info.external_attr = (stat.S_IFREG | mode) << 16
        out.writestr(info, "{}")
    restore_backup(archive, ["chats"], ROOMY)
    got = (usr_dir / "chats" / "c1" / "chat.json").stat().st_mode & 0o7777
    assert got & 0o600 == 0o600 and not got & 0o7022, oct(got)


@pytest.mark.parametrize("chat_id", ["a b", "<img src=x>", "x" * 65, "é"])
def test_a_chat_whose_id_the_page_cannot_ask_for_is_refused(chat_id, usr_dir, tmp_path):
    """The page opens a chat by an id of letters, digits, '-' and '_' (at most 64): such a
    chat was restored and listed, and could never be opened."""
    lived_in(usr_dir)
    before = tree(usr_dir)
    chat = json.dumps({"id": chat_id}).encode()
    archive = _zip(tmp_path / "b.zip", {f"usr/chats/{chat_id}/chat.json": chat})
    with pytest.raises(BackupRefused, match="chat id"):
        restore_backup(archive, ["chats"], ROOMY)
    assert tree(usr_dir) == before


#: Valid JSON nested deeper than Python's parser can follow (it recurses once a level).
DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_FILES = {
    "a chat": ("usr/chats/c9/chat.json", ["chats"]),
    "the task list": ("usr/scheduler/tasks.json", ["scheduler"]),
    "the settings": ("usr/settings.json", ["settings"]),
    "the secrets alone": ("usr/settings.json", ["secrets"]),
    "the MCP servers' setting": ("usr/settings.json", ["settings"]),
}


@pytest.mark.parametrize("case", list(DEEP_FILES))
def test_json_nested_too_deeply_to_read_is_refused_with_nothing_changed(
    case, usr_dir, tmp_path, capsys
):
    lived_in(usr_dir)
    before = tree(usr_dir)
    name, parts = DEEP_FILES[case]
    text = DEEP if "MCP" not in case else json.dumps({"mcp_servers": DEEP.decode()}).encode()
    archive = _zip(tmp_path / "b.zip", {name: text})
    with pytest.raises(BackupRefused, match="nested too deeply"):
        restore_backup(archive, parts, ROOMY)
    assert tree(usr_dir) == before
    assert cli(["restore", str(archive), "--parts", ",".join(parts), "--yes"]) == 2
    assert "nested too deeply" in capsys.readouterr().err
    assert tree(usr_dir) == before


def test_a_manifest_nested_too_deeply_to_read_is_refused(usr_dir, tmp_path):
    archive = tmp_path / "b.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("cadre-backup.json", DEEP)
    with pytest.raises(BackupRefused, match="nested too deeply"):
        preview(archive, ROOMY)
