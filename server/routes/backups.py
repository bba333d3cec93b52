"""Backups from the page: download a zip of the chosen parts; upload one, preview it, restore it.

Login and CSRF apply as to every route (server/security/guard.py); the download is a
POST for that reason (a backup may hold secrets). An uploaded backup waits
in `usr/` under a random token between its preview and its restore (one at
a time: a new upload replaces it, never while a restore reads it; one a killed
process left is removed at the next start: store/backup/uploads.py).

A restore while Cadre runs: every chat is let go first (its latest state
saved, then never saved again; refused while a chat runs, since the run's
next save would undo the restore), the files are swapped, and the chats are
listed again from disk; then the settings are put to work as after a save,
the knowledge index brought up to date, and whoever registered in
`app.extensions["cadre.restored"]` told which parts came back (a service
holding a part in memory reads it again there).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from flask import Blueprint, Response, after_this_request, current_app, jsonify, request, send_file
from pydantic import BaseModel, ConfigDict, Field
from werkzeug.exceptions import RequestEntityTooLarge

from helpers.errors import UserError
from helpers.settings import load_settings
from initialize import preload_local_models
from mcp_client.supervisor import McpSupervisor
from memory import memories
from profiles.plugin_mcp import with_plugin_servers
from server.routes.routing import body, chats, error
from server.security import reauth
from store.backup.make import make_backup
from store.backup.parts import PARTS, SECRETS, default_parts
from store.backup.restore import RestoreResult, preview, restore_backup
from store.backup.uploads import UploadShelf

log = logging.getLogger(__name__)

backup_pages = Blueprint("backups", __name__)

#: Where an app keeps its `UploadShelf` (app.extensions).
UPLOADS = "cadre.backup_uploads"
#: One restore at a time in this process (the files' lock keeps other processes out).
_restoring = threading.Lock()


class BackupBody(BaseModel):
    # A field misspelt must not fall back to the default parts without a word.
    model_config = ConfigDict(extra="forbid")

    parts: list[str] = Field(default_factory=default_parts)


#: What a restore changes, as the password's dialog names it ("Changing ... needs...").
RESTORING = "what this backup brings (settings, profiles, chats)"
#: What a backup's body may be, for the error that says it was not.
BACKUP_BODY_HINT = (
    'send a JSON object such as {"parts": ["chats", "settings"]} (parts: '
    + ", ".join(part.name for part in PARTS)
    + "), or no body for the default parts"
)


def _backup_body() -> BackupBody:
    """The parts asked for: no body is the default backup; anything else must be the JSON
    object `BackupBody` describes, or a UserError (a 400) says what is wrong with it."""
    return body(BackupBody, BACKUP_BODY_HINT)


class RestoreBody(BaseModel):
    token: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    parts: list[str] | None = None


def _uploads() -> UploadShelf:
    """This app's uploads waiting for a restore (one shelf per app, made on first use)."""
    shelf: UploadShelf = current_app.extensions.setdefault(UPLOADS, UploadShelf())
    return shelf


@backup_pages.get("/api/backup/parts")
def parts() -> Response:
    return jsonify({"parts": [
        {"name": p.name, "label": p.label, "default": p.default, "secret": p.name == SECRETS}
        for p in PARTS
    ]})  # fmt: skip


@backup_pages.post("/api/backup")
def download() -> Response:
    """The zip of the parts asked for (JSON `{"parts": [...]}`; "secrets" only when named;
    no body: the default parts)."""
    try:
        data = _backup_body()
    except UserError as exc:
        log.warning("backup refused: %s", exc)
        raise
    folder = Path(tempfile.mkdtemp(prefix="cadre-backup-"))
    try:
        result = make_backup(folder / "cadre-backup.zip", data.parts)
    except BaseException as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, UserError):  # an unknown part, none at all
            log.warning("backup refused: %s", exc)
        raise

    # The zip is read from an open file and its folder removed at once: nothing is left
    # behind however the response ends (a client that never finishes reading leaves no
    # close to clean up after). Where an open file cannot be removed (Windows), the folder
    # goes when the response closes.
    handle = result.path.open("rb")
    try:
        shutil.rmtree(folder)
    except OSError:

        @after_this_request
        def _clean(response: Response) -> Response:
            response.call_on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
            return response

    log.info("backup downloaded: %s (%d files)", ", ".join(result.parts), result.files)
    name = f"cadre-backup-{time.strftime('%Y%m%d-%H%M%S')}.zip"
    sent = send_file(handle, mimetype="application/zip", as_attachment=True,
                     download_name=name, max_age=0)  # fmt: skip
    sent.content_length = os.fstat(handle.fileno()).st_size  # a file object has no size told
    return sent


@backup_pages.post("/api/backup/preview")
def upload() -> Response | tuple[Response, int]:
    """A backup in the multipart field `archive`: kept for the restore, and what it holds."""
    limit = load_settings().backup_restore_max_mb * 1024 * 1024
    request.max_content_length = limit + 64 * 1024
    try:
        archive = request.files.get("archive")
    except RequestEntityTooLarge:
        return error(f"the backup is larger than {limit // 2**20} MB (backup_restore_max_mb)", 413)
    if archive is None or not archive.filename:
        raise UserError("send the backup zip as the multipart field 'archive'")
    with _uploads().taking(archive.stream) as (token, path):  # refused: not kept
        found = preview(path)
    return jsonify({"token": token, **asdict(found)})


@backup_pages.post("/api/backup/restore")
def restore() -> Response | tuple[Response, int]:
    """Restore the backup uploaded under `token` (its `parts`, default all but secrets).

    With a login set, only with the account's password again (server/security/reauth.py): a
    backup brings settings (the programs the host runs, the sandbox), profiles' tools
    that run in Cadre's own process and chats' own settings, so a session taken over
    must not restore one of its making."""
    data = body(RestoreBody)
    refused = reauth.password_refusal([RESTORING])
    if refused is not None:
        return refused
    shelf = _uploads()
    with shelf.using(data.token) as path:  # NotFound (a 404): upload it again
        if not _restoring.acquire(blocking=False):
            return error("a restore is under way", 409)
        try:
            result = _swap_in(path, data.parts)
            shelf.forget(data.token)  # restored: its file goes when this block ends
        finally:
            _restoring.release()
    _put_to_work(result.parts)
    return jsonify({"restored": result.parts, "files": result.files})


def _swap_in(path: Path, parts: list[str] | None) -> RestoreResult:
    """The backup's parts put in place of usr/'s, with every chat let go first."""
    with (
        chats().replacing("a backup is being restored: send the message again after it"),
        ExitStack() as held,
    ):
        # Services holding a part in memory (the scheduler's tasks) hold still while
        # the files are swapped: entered once no chat runs, so no agent waits on them.
        for hold in current_app.extensions.get("cadre.restoring", []):
            held.enter_context(hold())
        return restore_backup(path, parts, in_server=True)


def _put_to_work(parts: list[str]) -> None:
    """What a running Cadre holds of the restored parts, read again."""
    manager = chats()
    if "settings" in parts or SECRETS in parts:
        manager.apply_settings()
        applied = load_settings()
        preload_local_models(applied)
        supervisor = manager.runtime.service(McpSupervisor)
        if supervisor is not None:
            supervisor.apply(with_plugin_servers(applied.mcp_servers))
    if "knowledge" in parts or "memory" in parts:
        threading.Thread(target=_index_knowledge, name="cadre-knowledge", daemon=True).start()
    listeners: list[Callable[[list[str]], None]] = current_app.extensions.get("cadre.restored", [])
    for listener in listeners:
        try:
            listener(parts)
        except Exception:
            log.exception("after a restore, %r failed", listener)


def _index_knowledge() -> None:
    try:
        memories.refresh_knowledge(memories.knowledge_store())
    except Exception:
        log.exception("indexing usr/knowledge after a restore failed")
