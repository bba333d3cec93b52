"""`python3 cadre.py backup [path]` and `restore <zip>`, run as the user runs them.

Real subprocesses on a lived-in `usr/` (tests/support/backup_files.py): a
round trip, the question before a restore, and the refusal while a Cadre
runs on the same `usr/` (it holds usr/'s lock, taken here as run_ui.py does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from helpers.files import BASE_DIR
from store.backup import swap
from store.backup.cli import main as cli_main
from store.backup.make import make_backup
from tests.support.backup_files import lived_in, tree


def cadre(usr_dir: Path, *args: str, cwd: Path, answer: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env["CADRE_USR_DIR"] = str(usr_dir)
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "cadre.py"), *args], env=env, input=answer,
        capture_output=True, text=True, timeout=180, cwd=cwd,
    )  # fmt: skip


def test_a_backup_from_the_command_line_restores_an_equal_usr(usr_dir, tmp_path):
    lived_in(usr_dir)
    before = tree(usr_dir)
    made = cadre(usr_dir, "backup", "--secrets", cwd=tmp_path)  # no path: the current folder
    assert made.returncode == 0, made.stderr
    assert "WARNING" in made.stdout and "API keys" in made.stdout
    [archive] = tmp_path.glob("cadre-backup-*.zip")
    with zipfile.ZipFile(archive) as opened:
        assert "usr/secret_key" in opened.namelist()

    for part in ("chats", "skills", "memory", "projects"):
        shutil.rmtree(usr_dir / part)
    (usr_dir / "settings.json").write_text("{}")
    asked = cadre(usr_dir, "restore", archive.name, cwd=tmp_path, answer="n\n")
    assert asked.returncode == 1 and "Nothing was changed" in asked.stdout
    assert "Chats: 7 files" in asked.stdout and "(2 chats)" in asked.stdout
    assert not (usr_dir / "chats").exists()

    done = cadre(usr_dir, "restore", archive.name, "--secrets", "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Restored chats, settings" in done.stdout
    assert tree(usr_dir) == before


def test_a_restore_is_refused_while_cadre_runs_on_the_same_usr(usr_dir, tmp_path):
    lived_in(usr_dir)
    make_backup(tmp_path / "b.zip", ["chats"])
    shutil.rmtree(usr_dir / "chats")
    before = tree(usr_dir)
    running = swap.hold_while_running()  # what run_ui.py holds while it serves
    try:
        refused = cadre(usr_dir, "restore", str(tmp_path / "b.zip"), "--yes", cwd=tmp_path)
    finally:
        running.close()
    assert refused.returncode == 2
    assert "Cadre is running on it" in refused.stderr
    assert tree(usr_dir) == before


def test_a_backup_to_a_place_that_cannot_hold_it_says_so_without_a_traceback(
    usr_dir, tmp_path, capsys
):
    lived_in(usr_dir)
    (tmp_path / "a-file").write_text("x")
    assert cli_main(["backup", str(tmp_path / "a-file" / "b.zip")]) == 2
    error = capsys.readouterr().err
    assert "cannot make the backup" in error and "Traceback" not in error
    assert cli_main(["restore", str(tmp_path), "--preview"]) == 2  # a folder, not a zip
    assert "cannot read the backup" in capsys.readouterr().err
