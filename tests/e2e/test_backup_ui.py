"""Backup and restore in Chromium: choose parts, download; upload, preview, restore.

One server for the module; the test walks the dialog the way a newcomer would,
from Settings, and checks the files of the server's usr/ on disk.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import open_page
from tests.support.axe import axe_violations, describe
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess

SHOTS = Path("/tmp/shots-backups")


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    server = live_server(tmp_path_factory.mktemp("backup-ui"), _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url, bypass_csp=True)  # axe runs in the page


def status_starts(page, text: str) -> None:
    page.wait_for_function(
        "(text) => document.querySelector('[data-testid=backup-status]')"
        ".textContent.startsWith(text)", arg=text,
    )  # fmt: skip


def test_a_backup_downloaded_from_settings_restores_after_a_preview(page, cadre, tmp_path):
    usr = Path(cadre.env["CADRE_USR_DIR"])
    (usr / "knowledge").mkdir(parents=True, exist_ok=True)
    (usr / "knowledge" / "guide.md").write_text("# Kept\n")
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("settings-backup").click()
    secrets = page.get_by_test_id("backup-part-secrets")
    secrets.wait_for()
    assert not secrets.is_checked() and page.get_by_test_id("backup-part-chats").is_checked()
    secrets.check()
    assert "API keys" in page.get_by_test_id("backup-secrets-warning").inner_text()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "backup-1280.png"))
    secrets.uncheck()
    assert page.get_by_test_id("backup-secrets-warning").is_hidden()
    found = axe_violations(page, '[data-testid="backup"]')
    assert not found, f"axe on the backup dialog:\n{describe(found)}"

    with page.expect_download() as waiting:
        page.get_by_test_id("backup-download").click()
    saved = tmp_path / waiting.value.suggested_filename
    waiting.value.save_as(saved)
    with zipfile.ZipFile(saved) as archive:
        manifest = json.loads(archive.read("cadre-backup.json"))
        assert "usr/knowledge/guide.md" in archive.namelist()
    assert "secrets" not in manifest["parts"] and "knowledge" in manifest["parts"]

    # After the backup: a file changes, one comes. The restore puts back what was.
    (usr / "knowledge" / "guide.md").write_text("# Changed\n")
    (usr / "knowledge" / "later.md").write_text("# Later\n")
    page.get_by_test_id("backup-upload").set_input_files(str(saved))
    row = page.get_by_test_id("backup-row-knowledge")
    row.wait_for()
    assert "In the backup: 1 file" in row.inner_text()
    assert "Replaces what Cadre has now: 2 files" in row.inner_text()
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SHOTS / "backup-preview-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_test_id("backup-restore").click()
    page.get_by_test_id("confirm-ok").click()
    status_starts(page, "Restored:")
    assert (usr / "knowledge" / "guide.md").read_text() == "# Kept\n"
    assert not (usr / "knowledge" / "later.md").exists()
    page.screenshot(path=str(SHOTS / "backup-restored-1280.png"))

    hostile = tmp_path / "hostile.zip"
    with zipfile.ZipFile(hostile, "w") as archive:
        archive.writestr("cadre-backup.json", json.dumps(manifest))
        archive.writestr("usr/knowledge/../../../escaped.md", "x")
    page.get_by_test_id("backup-upload").set_input_files(str(hostile))
    status_starts(page, "This backup cannot be restored")
    assert "goes up a folder" in page.get_by_test_id("backup-status").inner_text()
    assert page.get_by_test_id("backup-restore").is_hidden()
