"""Paths from outside stay in their folder: every escape form is refused with a reason."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time

import pytest

from helpers.confine import (
    FileRefused,
    PathRefused,
    check_name,
    open_inside,
    read_inside,
    resolve_inside,
)

ESCAPES = [
    ("../secret.txt", "'..'"),
    ("notes/../../secret.txt", "'..'"),
    ("..", "'..'"),
    ("／..／secret", "'..'"),
    ("notes／secret", "look-alike slash"),
    ("．．/secret", "'..'"),  # fullwidth dots become '..' under NFKC
    ("%2e%2e/secret", "percent-encoded"),
    ("notes%2F..%2Fsecret", "percent-encoded"),
    ("..\\secret", "backslash"),
    ("notes\x00.txt", "control characters"),
    ("notes\n.txt", "control characters"),
    ("notes\x7f.txt", "control characters"),  # DEL
    ("", "empty"),
    ("   ", "empty"),
]


@pytest.mark.parametrize(("raw", "reason"), ESCAPES)
def test_escape_forms_are_refused_by_name(raw, reason):
    with pytest.raises(PathRefused, match=reason):
        check_name(raw)


def test_plain_names_pass(tmp_path):
    for raw in ["a.txt", "notes/today.md", "100% done.txt", "café/menu.txt", ".hidden", "a..b"]:
        assert resolve_inside(raw, tmp_path) == (tmp_path / raw).resolve()


def test_absolute_paths_only_inside(tmp_path):
    assert resolve_inside(str(tmp_path / "x.txt"), tmp_path) == (tmp_path / "x.txt").resolve()
    with pytest.raises(PathRefused, match="outside the work folder"):
        resolve_inside("/etc/passwd", tmp_path)
    with pytest.raises(PathRefused, match="outside"):
        resolve_inside("~/.bashrc", tmp_path)


def test_symlinks_pointing_out_are_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dir").symlink_to(outside)
    (root / "inner.txt").write_text("fine")
    (root / "ok-link.txt").symlink_to(root / "inner.txt")
    for raw in ["link.txt", "dir/secret.txt", "dir/new.txt"]:
        with pytest.raises(PathRefused, match="outside"):
            resolve_inside(raw, root)
    assert resolve_inside("ok-link.txt", root) == (root / "inner.txt").resolve()


def test_a_link_swapped_in_after_the_check_is_caught_at_open(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    checked = resolve_inside("file.txt", root)  # does not exist yet: allowed
    checked.symlink_to(outside / "secret.txt")  # ...then an attacker plants a link
    with pytest.raises(PathRefused, match="outside"):
        open_inside(checked, os.O_RDONLY, [root])
    fd = open_inside(root / "new.txt", os.O_WRONLY | os.O_CREAT, [root])
    os.close(fd)


def test_a_link_swapped_back_while_the_open_waits_is_caught_by_the_descriptor(tmp_path):
    """The path may name something else again by the time the open returns: what is checked
    is the file the descriptor holds, never the path resolved once more. The open waits on
    a FIFO outside; the link is turned back to a file inside before a writer lets it go."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.mkfifo(outside / "fifo")
    (root / "inner.txt").write_text("inside")
    link = root / "file.txt"
    got: list[object] = []
    for _ in range(20):  # each round ends; one where the open waited on the FIFO decides
        link.unlink(missing_ok=True)
        link.symlink_to(outside / "fifo")
        opener = threading.Thread(target=lambda: got.append(_opened(link, root)))
        opener.start()
        time.sleep(0.01)  # a head start only: a round the open had not begun is run again
        (root / "swap").symlink_to(root / "inner.txt")
        os.replace(root / "swap", link)  # the path names a file inside again
        released = _release(outside / "fifo", opener)
        opener.join(10)
        assert not opener.is_alive()
        if released:
            break
        got.clear()  # the open came after the swap: it opened the file inside; again
    else:
        pytest.fail("the open never waited on the FIFO in 20 rounds")
    assert len(got) == 1 and isinstance(got[0], PathRefused), got
    assert "leads outside its folder" in str(got[0])


def _opened(path, root) -> object:
    """What open_inside gives for `path` (the file's first bytes), or what it raised."""
    try:
        fd = open_inside(path, os.O_RDONLY, [root])
    except PathRefused as exc:
        return exc
    with os.fdopen(fd, "rb") as opened:
        return opened.read(10)


def _release(fifo, opener: threading.Thread) -> bool:
    """Open the FIFO's writing end once the reader waits on it; False when the reader ended
    without ever opening the FIFO."""
    while opener.is_alive():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return True
        except OSError as exc:  # ENXIO: no reader on it (yet)
            if exc.errno != errno.ENXIO:
                raise
        opener.join(0.001)
    return False


def test_a_hard_link_is_refused_whichever_name_is_opened(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    os.link(outside / "secret.txt", root / "x.txt")
    with pytest.raises(FileRefused, match=r"x.txt is a hard link \(the same file has 2 names"):
        open_inside(root / "x.txt", os.O_RDONLY, [root])
    os.unlink(outside / "secret.txt")  # one name again: an ordinary file of the folder
    os.close(open_inside(root / "x.txt", os.O_RDONLY, [root]))
    (root / "sub").mkdir()  # a folder's link count counts its subfolders: not a hard link
    os.close(open_inside(root, os.O_RDONLY, [root]))


def test_cadres_secret_files_are_refused_even_inside_the_roots(usr_dir):
    (usr_dir / "settings.json").write_text("{}")
    (usr_dir / "secret_key").write_bytes(b"k" * 32)
    (usr_dir / "notes.txt").write_text("mine")
    roots = [usr_dir.parent]  # a work folder set to a folder that holds usr/
    for name in ("settings.json", "secret_key"):
        with pytest.raises(FileRefused, match="one of Cadre's own secret files"):
            open_inside(usr_dir / name, os.O_RDONLY, roots)
    assert read_inside(usr_dir / "notes.txt", roots, 100) == b"mine"
    # The key alone (no settings saved yet) is as much Cadre's own.
    (usr_dir / "settings.json").unlink()
    with pytest.raises(FileRefused, match="one of Cadre's own secret files"):
        open_inside(usr_dir / "secret_key", os.O_RDONLY, roots)


def test_a_fifo_is_refused_without_waiting_and_a_read_is_bounded(tmp_path):
    """A FIFO planted in a folder must not hang the reader (no writer ever comes); a file is
    read up to one byte past the limit, so the caller can tell it was longer."""
    os.mkfifo(tmp_path / "fifo")
    outcome: list[BaseException] = []
    reader = threading.Thread(
        target=lambda: outcome.append(_refusal(read_inside, tmp_path / "fifo", [tmp_path], 10)),
        daemon=True,
    )
    reader.start()
    reader.join(10)
    if reader.is_alive():  # a blocking open: let it go, and say so
        os.close(os.open(tmp_path / "fifo", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_inside waited on a FIFO")
    assert str(outcome[0]) == f"{tmp_path / 'fifo'} is not a regular file"
    (tmp_path / "long.txt").write_bytes(b"0123456789")
    assert read_inside(tmp_path / "long.txt", [tmp_path], 4) == b"01234"


def _refusal(call, *args) -> BaseException | None:  # type: ignore[no-untyped-def]
    try:
        call(*args)
    except PathRefused as exc:
        return exc
    return None


def test_a_descriptor_is_not_inherited_and_a_new_file_is_not_executable(tmp_path):
    """Opened for Cadre, not for the commands it starts; a file made here is rw-r--r-- (less
    the umask), never executable."""
    fd = open_inside(tmp_path / "new.txt", os.O_WRONLY | os.O_CREAT, [tmp_path])
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644 & ~umask


def test_knowledge_indexing_skips_links_that_lead_out(usr_dir, tmp_path):
    from memory import memories

    knowledge = usr_dir / "knowledge"
    knowledge.mkdir()
    (tmp_path / "private.md").write_text("private words")
    (knowledge / "hard.md").hardlink_to(tmp_path / "private.md")
    (knowledge / "soft.md").symlink_to(tmp_path / "private.md")
    (knowledge / "team.md").write_text("Ada leads the compiler team.")
    store = memories.knowledge_store()
    memories.refresh_knowledge(store)
    assert [m.text for m in store.all()] == ["Ada leads the compiler team."]
