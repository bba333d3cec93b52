"""Backups of usr/: a round trip gives back an equal usr/; a bad zip changes nothing."""

from __future__ import annotations

import io
import json
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from helpers.errors import UserError
from store.backup import swap
from store.backup.check import BackupRefused, Limits
from store.backup.make import make_backup
from store.backup.parts import default_parts
from store.backup.restore import preview, restore_backup
from tests.support.backup_files import SECRET_SETTINGS, lived_in, tree

ROOMY = Limits(max_bytes=50 * 2**20, max_files=1000)
#: What no backup takes (and so no restore touches).
OUTSIDE = ("workdir/", "sessions.json", "binary.bin", "memory/default/export.jsonl")


def settings_of(usr: Path) -> dict:
    return json.loads((usr / "settings.json").read_text())


def test_a_round_trip_gives_back_an_equal_usr_folder(usr_dir, tmp_path):
    lived_in(usr_dir)
    before = tree(usr_dir)
    backup = make_backup(tmp_path / "b.zip", [*default_parts(), "secrets"])
    assert stat.S_IMODE(backup.path.stat().st_mode) == 0o600  # settings and chats inside
    # Everything changes, goes or comes: the restore must put back exactly what was.
    shutil.rmtree(usr_dir / "chats")
    (usr_dir / "chats" / "c9").mkdir(parents=True)
    (usr_dir / "chats" / "c9" / "chat.json").write_text('{"id": "c9"}')
    (usr_dir / "settings.json").write_text('{"chat_model": "other/model"}')
    shutil.rmtree(usr_dir / "memory")
    (usr_dir / "skills" / "tidy" / "SKILL.md").write_text("changed")
    (usr_dir / "secret_key").write_bytes(b"another key")

    result = restore_backup(backup.path, [*default_parts(), "secrets"], ROOMY)

    assert tree(usr_dir) == before
    assert set(result.parts) == {*default_parts(), "secrets"}
    assert not [p for p in usr_dir.iterdir() if p.name.startswith(".restore-")]


def test_a_backup_without_secrets_holds_none_and_its_restore_keeps_the_secrets_here(
    usr_dir, tmp_path
):
    lived_in(usr_dir)
    backup = make_backup(tmp_path / "b.zip", default_parts())
    with zipfile.ZipFile(backup.path) as archive:
        names = set(archive.namelist())
        blob = b"".join(archive.read(name) for name in names)
    for secret in ("sk-chat-secret-1234", "external-key-5678", "pbkdf2$hash", "ghp-secret",
                   "mcp-token-9999", "project-secret"):  # fmt: skip
        assert secret.encode() not in blob
    assert "usr/secret_key" not in names and "usr/projects/p1/secrets.json" not in names
    assert "usr/workdir/scratch.txt" not in names and "usr/sessions.json" not in names

    # Restored where other secrets are set: those stay, the rest comes from the backup.
    (usr_dir / "settings.json").write_text(json.dumps({
        **SECRET_SETTINGS, "chat_model": "other/model", "chat_api_key": "sk-newer-key",
    }))  # fmt: skip
    (usr_dir / "projects" / "p1" / "secrets.json").write_text('{"P1_TOKEN": "newer"}')
    key = (usr_dir / "secret_key").read_bytes()
    restore_backup(backup.path, None, ROOMY)
    restored = settings_of(usr_dir)
    assert restored["chat_model"] == "openai/gpt-4.1-mini"
    assert restored["chat_api_key"] == "sk-newer-key"
    assert restored["secrets"] == SECRET_SETTINGS["secrets"]
    assert "mcp-token-9999" in restored["mcp_servers"]  # unmasked from the settings here
    assert (usr_dir / "projects" / "p1" / "secrets.json").read_text() == '{"P1_TOKEN": "newer"}'
    assert (usr_dir / "secret_key").read_bytes() == key

    # Where no MCP token is known, the masked one is emptied, never kept as "***".
    (usr_dir / "settings.json").write_text("{}")
    restore_backup(backup.path, ["settings"], ROOMY)
    servers = json.loads(settings_of(usr_dir)["mcp_servers"])["mcpServers"]
    assert servers["gh"]["env"] == {"GH_TOKEN": ""}
    assert settings_of(usr_dir).get("chat_api_key", "") == ""  # the default: none


def test_secrets_alone_come_back_into_the_settings_here(usr_dir, tmp_path):
    lived_in(usr_dir)
    backup = make_backup(tmp_path / "b.zip", ["chats", "secrets"])
    (usr_dir / "settings.json").write_text(json.dumps({"chat_model": "other/model"}))
    (usr_dir / "secret_key").write_bytes(b"another key")
    restore_backup(backup.path, ["secrets"], ROOMY)
    restored = settings_of(usr_dir)
    assert restored["chat_model"] == "other/model"  # the settings part was not chosen
    assert restored["chat_api_key"] == "sk-chat-secret-1234"
    assert restored["auth_password"] == SECRET_SETTINGS["auth_password"]
    assert (usr_dir / "secret_key").read_bytes() != b"another key"
    assert stat.S_IMODE((usr_dir / "settings.json").stat().st_mode) == 0o600


def test_a_restore_naming_no_parts_leaves_the_secrets_here_though_the_backup_has_them(
    usr_dir, tmp_path
):
    lived_in(usr_dir)
    backup = make_backup(tmp_path / "b.zip", [*default_parts(), "secrets"])
    here = {**SECRET_SETTINGS, "chat_api_key": "sk-newer-key", "secrets": {"GITHUB_TOKEN": "new"}}
    (usr_dir / "settings.json").write_text(json.dumps(here))
    (usr_dir / "projects" / "p1" / "secrets.json").write_text('{"P1_TOKEN": "newer"}')
    (usr_dir / "secret_key").write_bytes(b"this Cadre's key")
    result = restore_backup(backup.path, None, ROOMY)
    restored = settings_of(usr_dir)
    assert (restored["chat_api_key"], restored["secrets"]) == (
        "sk-newer-key",
        {"GITHUB_TOKEN": "new"},
    )
    assert (usr_dir / "projects" / "p1" / "secrets.json").read_text() == '{"P1_TOKEN": "newer"}'
    assert (usr_dir / "secret_key").read_bytes() == b"this Cadre's key"
    assert "secrets" not in result.parts and "settings" in result.parts


def test_a_project_secrets_file_in_a_backup_that_says_it_has_no_secrets_is_refused(
    usr_dir, tmp_path
):
    """A zip whose manifest says no secrets must hold none: a project's secrets.json slipped
    in would replace this Cadre's (a restore of the projects part takes the folder whole)."""
    lived_in(usr_dir)
    before = tree(usr_dir)
    entries = {"usr/projects/p1/settings.json": b"{}",
               "usr/projects/p1/secrets.json": b'{"P1_TOKEN": "theirs"}'}  # fmt: skip
    archive = _zip(tmp_path / "b.zip", entries, parts=["projects"])
    with pytest.raises(BackupRefused, match="secrets.json', of a part its .* does not list"):
        restore_backup(archive, None, ROOMY)
    assert tree(usr_dir) == before


def test_the_preview_says_what_each_part_holds_and_what_it_would_replace(usr_dir, tmp_path):
    lived_in(usr_dir)
    backup = make_backup(tmp_path / "b.zip", ["chats", "skills"])
    shutil.rmtree(usr_dir / "chats" / "c2")
    found = preview(backup.path, ROOMY)
    rows = {row.name: row for row in found.parts}
    assert list(rows) == ["chats", "skills"] and not found.secrets
    assert (rows["chats"].backup_chats, rows["chats"].current_chats) == (2, 1)
    # Two chats' three files, the OpenAI and A2A conversations' maps, a task, the bot's chats.
    assert rows["chats"].backup_files == 7 and rows["chats"].current_files == 6


def _zip(path: Path, entries: dict[str, bytes], parts: list[str] | None = None,
         links: tuple[str, ...] = ()) -> Path:  # fmt: skip
    manifest = {"format": "cadre-backup", "version": 1, "created_at": 1.0,
                "parts": parts or ["chats", "settings"], "secrets": False}  # fmt: skip
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cadre-backup.json", json.dumps(manifest))
        for name, data in entries.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


HOSTILE = {
    "dot-dot": ({"usr/chats/../../escaped.txt": b"x"}, (), "goes up a folder"),
    "dot-dot-first": ({"../escaped.txt": b"x"}, (), "outside its usr/ folder"),
    "absolute": ({"/tmp/escaped.txt": b"x"}, (), "absolute path"),
    "absolute-inside": ({"usr//etc/escaped.txt": b"x"}, (), "unusable path"),
    "backslash": ({"usr/chats\\..\\..\\escaped.txt": b"x"}, (), "backslash"),
    "symlink": ({}, ("usr/chats/c1/link.json",), "link"),
    "unknown part": ({"usr/workdir/x.txt": b"x"}, (), "of no part"),
    "unlisted part": ({"usr/skills/s/SKILL.md": b"x"}, (), "does not list"),
    "secret not asked": ({"usr/secret_key": b"k"}, (), "does not list"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_zip_escaping_usr_or_hiding_a_link_is_refused_with_nothing_changed(
    case, usr_dir, tmp_path
):
    lived_in(usr_dir)
    before = tree(usr_dir)
    entries, links, why = HOSTILE[case]
    archive = _zip(tmp_path / "bad.zip", {"usr/chats/c1/chat.json": b"{}", **entries},
                   links=links)  # fmt: skip
    with pytest.raises(BackupRefused, match=why):
        restore_backup(archive, None, ROOMY)
    assert tree(usr_dir) == before
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped.txt").exists()
    assert not [p for p in usr_dir.iterdir() if p.name.startswith(".restore-")]


def test_a_truncated_zip_is_refused_with_nothing_changed(usr_dir, tmp_path):
    lived_in(usr_dir)
    backup = make_backup(tmp_path / "b.zip", default_parts())
    data = backup.path.read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(data[: len(data) * 2 // 3])
    before = tree(usr_dir)
    with pytest.raises(BackupRefused, match="not a readable zip"):
        restore_backup(cut, None, ROOMY)
    assert tree(usr_dir) == before


def test_a_damaged_entry_stops_the_restore_before_usr_is_touched(usr_dir, tmp_path):
    lived_in(usr_dir)
    archive = _zip(tmp_path / "b.zip", {"usr/chats/c1/chat.json": b"{}" + b" " * 4000,
                                         "usr/settings.json": b"{}"})  # fmt: skip
    data = bytearray(archive.read_bytes())
    at = data.index(b"{}" + b" " * 100)  # stored uncompressed: flip a byte of the content
    data[at + 50] = ord("X")
    archive.write_bytes(bytes(data))
    before = tree(usr_dir)
    with pytest.raises(BackupRefused, match="cannot be unpacked"):
        restore_backup(archive, None, ROOMY)
    assert tree(usr_dir) == before
    assert not [p for p in usr_dir.iterdir() if p.name.startswith(".restore-")]


def test_unusable_settings_in_a_backup_are_refused_with_nothing_changed(usr_dir, tmp_path):
    lived_in(usr_dir)
    bad = {"usr/chats/c3/chat.json": b"{}", "usr/settings.json": b'{"chat_ctx_length": -5}'}
    archive = _zip(tmp_path / "b.zip", bad)
    before = tree(usr_dir)
    with pytest.raises(BackupRefused, match="settings.json is not valid"):
        restore_backup(archive, None, ROOMY)
    assert tree(usr_dir) == before


def test_a_zip_bomb_is_refused_from_its_directory_before_anything_is_unpacked(usr_dir, tmp_path):
    lived_in(usr_dir)
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "cadre-backup.json",
            json.dumps(
                {"format": "cadre-backup", "version": 1, "parts": ["chats"], "secrets": False}
            ),
        )
        archive.writestr("usr/chats/c1/chat.json", b"{}")
        with archive.open("usr/chats/c1/messages/1.txt", "w") as sink:  # 20 MB of zeros
            for _ in range(20):
                sink.write(bytes(2**20))
    assert bomb.stat().st_size < 2**20
    before = tree(usr_dir)
    with pytest.raises(BackupRefused, match="unpacks to 20.0 MB.*at most 10 MB"):
        restore_backup(bomb, None, Limits(max_bytes=10 * 2**20, max_files=1000))
    many = _zip(tmp_path / "many.zip", {f"usr/chats/c{n}/chat.json": b"{}" for n in range(30)})
    with pytest.raises(BackupRefused, match="31 entries; a restore takes at most 20"):
        restore_backup(many, None, Limits(max_bytes=2**20, max_files=20))
    assert tree(usr_dir) == before
    assert not [p for p in usr_dir.iterdir() if p.name.startswith(".restore-")]


def test_a_restore_cut_short_by_a_crash_is_put_back_at_the_next_start(usr_dir):
    lived_in(usr_dir)
    before = tree(usr_dir)
    stage = swap.new_stage()
    (stage / "new" / "skills" / "other").mkdir(parents=True)
    (stage / "new" / "skills" / "other" / "SKILL.md").write_text("new")
    moves = swap.plan(stage, ["skills", "knowledge"])
    # The crash: the journal says "swapping" and only the first two moves were made.
    swap._write_journal(stage, moves, "swapping")
    for move in moves[:2]:
        Path(move.target).parent.mkdir(parents=True, exist_ok=True)
        Path(move.source).rename(move.target)
    assert tree(usr_dir, skip=(".restore-",)) != before

    assert swap.recover() == [stage.name]
    assert tree(usr_dir) == before
    assert not stage.exists()


def test_a_part_chosen_that_the_backup_lacks_is_a_clear_error(usr_dir, tmp_path):
    lived_in(usr_dir)
    backup = make_backup(tmp_path / "b.zip", ["chats"])
    with pytest.raises(BackupRefused, match="does not hold memory"):
        restore_backup(backup.path, ["memory"], ROOMY)
    with pytest.raises(BackupRefused, match="does not hold secrets"):
        restore_backup(backup.path, ["chats", "secrets"], ROOMY)
    with pytest.raises(UserError, match=r"unknown part\(s\) photos"):
        make_backup(tmp_path / "c.zip", ["chats", "photos"])
    with pytest.raises(BackupRefused, match="not a Cadre backup"):
        restore_backup(_zip_plain(tmp_path / "plain.zip"), None, ROOMY)


def _zip_plain(path: Path) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("usr/chats/c1/chat.json", "{}")
    path.write_bytes(buffer.getvalue())
    return path


def test_restored_settings_never_turn_the_login_off_nor_pair_a_name_with_another_password(
    usr_dir, tmp_path
):
    """A backup made before a login was set: its settings restored kept this Cadre's
    password but took the backup's empty login name, and an empty name means no login
    (server/security/auth.py): anyone who reached Cadre was in."""
    (usr_dir / "settings.json").write_text(json.dumps({"chat_model": "old/model"}))
    backup = make_backup(tmp_path / "b.zip", ["settings"])
    (usr_dir / "settings.json").write_text(json.dumps(SECRET_SETTINGS))
    restore_backup(backup.path, ["settings"], ROOMY)
    restored = settings_of(usr_dir)
    assert restored["chat_model"] == "old/model"
    assert (restored.get("auth_login"), restored.get("auth_password")) == (
        SECRET_SETTINGS["auth_login"], SECRET_SETTINGS["auth_password"])  # fmt: skip


def test_a_backup_without_secrets_leaves_out_each_persons_secret_files(usr_dir, tmp_path):
    """A member's project secrets and own settings (keys, secrets) are secrets too, in
    their space under users/<name>/, as the first admin's are under usr/."""
    space = usr_dir / "users" / "bea"
    (space / "projects" / "p").mkdir(parents=True)
    (space / "projects" / "p" / "secrets.json").write_text('{"TOKEN": "beas-project-token"}')
    (space / "projects" / "p" / "settings.json").write_text('{"description": "kept"}')
    (space / "my_settings.json").write_text('{"secrets": {"K": "beas-own-secret"}}')
    made = make_backup(tmp_path / "b.zip", default_parts())
    with zipfile.ZipFile(made.path) as archive:
        names = archive.namelist()
        held = b"".join(archive.read(name) for name in names)
    assert any(name.endswith("users/bea/projects/p/settings.json") for name in names)
    assert b"beas-project-token" not in held and b"beas-own-secret" not in held
    with_secrets = make_backup(tmp_path / "s.zip", [*default_parts(), "secrets"])
    with zipfile.ZipFile(with_secrets.path) as archive:
        assert any(n.endswith("users/bea/my_settings.json") for n in archive.namelist())
    # Restored without secrets: the secret files here stay, the backup's others come back.
    (space / "projects" / "p" / "settings.json").write_text('{"description": "changed"}')
    restore_backup(made.path, None, ROOMY)
    assert (space / "projects" / "p" / "settings.json").read_text() == '{"description": "kept"}'
    assert "beas-project-token" in (space / "projects" / "p" / "secrets.json").read_text()
    assert "beas-own-secret" in (space / "my_settings.json").read_text()


def test_the_accounts_part_holds_what_each_person_spent(usr_dir, tmp_path):
    """usr/usage.json (accounts/usage.py) is each person's, as their account is: it comes
    and goes with the accounts part."""
    from accounts.usage import Spent, UsageLedger

    ledger = UsageLedger(usr_dir / "usage.json")
    ledger.add("ann", Spent(prompt_tokens=100, completion_tokens=20, calls=1, cost=0.5))
    ledger.close()
    backup = make_backup(tmp_path / "b.zip", ["accounts"])
    with zipfile.ZipFile(backup.path) as archive:
        assert "usr/usage.json" in archive.namelist()
    later = UsageLedger(usr_dir / "usage.json")
    later.add("ann", Spent(prompt_tokens=5000, calls=1))
    later.close()

    restore_backup(backup.path, ["accounts"], ROOMY)
    spent = UsageLedger(usr_dir / "usage.json").today("ann")
    assert (spent.tokens, spent.calls, spent.cost) == (120, 1, 0.5)
