"""A backup uploaded for a restore never stays in `usr/` after the process that took it.

Real run_ui.py processes on one `usr/`: a Cadre killed (SIGKILL) with an upload waiting
leaves the file, and its next start removes it; a second Cadre starting on the same
`usr/` meanwhile leaves a live one's upload alone, and that one restores it.
"""

from __future__ import annotations

import io
from pathlib import Path

import requests

from tests.support.live_web import csrf_token, live_server
from tests.support.server_process import ServerProcess

UPLOADS = ".backup-upload-*"


def page(server: ServerProcess) -> requests.Session:
    """A page's session of `server`: its cookie and the CSRF token it sends."""
    http = requests.Session()
    http.headers["X-CSRF-Token"] = csrf_token(http, server)
    return http


def upload(http: requests.Session, server: ServerProcess, backup: bytes) -> str:
    """Upload `backup` for a restore, as the page does; its token."""
    files = {"archive": ("b.zip", io.BytesIO(backup), "application/zip")}
    previewed = http.post(f"{server.url}/api/backup/preview", files=files, timeout=60)
    assert previewed.status_code == 200, previewed.text
    return str(previewed.json()["token"])


def waiting(usr: Path) -> list[str]:
    return sorted(path.name for path in usr.glob(UPLOADS))


def test_an_upload_left_by_a_killed_cadre_is_gone_at_its_next_start(tmp_path, llm):
    server = live_server(tmp_path / "a", llm.base_url)
    try:
        http = page(server)
        backup = http.post(f"{server.url}/api/backup", json={"parts": ["skills"]}, timeout=60)
        assert backup.status_code == 200, backup.text
        upload(http, server, backup.content)
        assert len(waiting(server.usr_dir)) == 1
        server.kill()  # SIGKILL between the preview and the restore
        assert len(waiting(server.usr_dir)) == 1  # what the kill leaves

        server.start()
        assert waiting(server.usr_dir) == []
        assert "backup upload" in (tmp_path / "a" / "server.log").read_text()
    finally:
        server.stop()


def test_a_second_cadre_starting_leaves_a_live_ones_upload_to_it(tmp_path, llm):
    first = live_server(tmp_path / "a", llm.base_url)
    second = ServerProcess(first.env, tmp_path / "second.log")
    try:
        http = page(first)
        backup = http.post(f"{first.url}/api/backup", json={"parts": ["skills"]}, timeout=60)
        token = upload(http, first, backup.content)
        kept = waiting(first.usr_dir)
        second.start()  # the same usr/: its start must not take the first one's upload
        assert waiting(first.usr_dir) == kept
        # A new connection: the one kept from before the second start may have idled past the
        # server's keep-alive, and a POST on a connection the server is closing is reset.
        http.close()
        restored = http.post(f"{first.url}/api/backup/restore", json={"token": token}, timeout=60)
        assert restored.status_code == 200, restored.text
        assert restored.json()["restored"] == ["skills"]
        assert waiting(first.usr_dir) == []
    finally:
        second.stop()
        first.stop()
