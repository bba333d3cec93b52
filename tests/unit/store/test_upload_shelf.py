"""Uploads waiting for a restore: one at a time, never removed while a restore reads one,
and those a stopped process left removed only when no Cadre holds usr/."""

from __future__ import annotations

import io
import threading

import pytest

from helpers.errors import NotFound
from store.backup import swap
from store.backup.uploads import UploadShelf, upload_path

UPLOADS = ".backup-upload-*.zip"


def take(shelf: UploadShelf, data: bytes = b"zip") -> str:
    with shelf.taking(io.BytesIO(data)) as (token, path):
        assert path.read_bytes() == data
    return token


def test_a_new_upload_replaces_the_one_waiting(usr_dir):
    shelf = UploadShelf()
    first = take(shelf)
    second = take(shelf)
    assert [p.name for p in usr_dir.glob(UPLOADS)] == [upload_path(second).name]
    with pytest.raises(NotFound, match="upload it again"), shelf.using(first):
        pass
    with shelf.using(second) as path:
        assert path.read_bytes() == b"zip"


def test_an_upload_refused_at_its_preview_is_not_kept(usr_dir):
    shelf = UploadShelf()
    with pytest.raises(ValueError), shelf.taking(io.BytesIO(b"not a zip")):
        raise ValueError("refused")
    assert list(usr_dir.glob(UPLOADS)) == []


def test_an_upload_being_restored_stays_until_its_restore_ends(usr_dir):
    """Another tab uploads while a restore reads the first upload (another thread)."""
    shelf = UploadShelf()
    restoring = take(shelf, b"first")
    reading, uploaded = threading.Event(), threading.Event()
    seen: list[bytes] = []

    def restore() -> None:
        with shelf.using(restoring) as path:
            reading.set()
            uploaded.wait(10)
            seen.append(path.read_bytes())  # the restore reads on
            shelf.forget(restoring)  # restored

    worker = threading.Thread(target=restore)
    worker.start()
    assert reading.wait(10)
    newer = take(shelf, b"second")
    assert upload_path(restoring).is_file()
    uploaded.set()
    worker.join(10)
    assert seen == [b"first"]
    assert [p.name for p in usr_dir.glob(UPLOADS)] == [upload_path(newer).name]


def test_uploads_left_behind_are_swept_only_when_no_cadre_holds_usr(usr_dir):
    take(UploadShelf())  # a process that ended before its restore, as far as anyone knows
    running = swap.hold_while_running()  # what run_ui.py holds while it runs
    try:
        swap.recover()  # another process starting meanwhile
        assert len(list(usr_dir.glob(UPLOADS))) == 1
    finally:
        running.close()
    swap.recover()  # the next start, nobody else on usr/
    assert list(usr_dir.glob(UPLOADS)) == []
