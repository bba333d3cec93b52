"""The scratch space's count sees what a command hid from Cadre's user by a folder's mode."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from execution.scratch import used

#: A user that owns nothing here, for the count where Cadre runs as root (as CI does).
NOBODY = 65534
MB = 1 << 20


def count_as_cadres_user(space: Path) -> tuple[int, dict[str, str]]:
    """In a child running as a plain user (this one, or `nobody` where the tests run as
    root, to whom root's rights do not apply): a command's folders, two of them closed to
    their owner (no read, no search), 3 MB each; then the count, and their modes after."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reported through the pipe
        code = 1
        try:
            if os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            for name, mode in (("shut", 0o000), ("unsearchable", 0o600), ("open", 0o755)):
                (space / name).mkdir()
                (space / name / "big").write_bytes(b"x" * 3 * MB)
                os.chmod(space / name, mode)
            modes = ",".join(f"{p.name}={stat.filemode(p.lstat().st_mode)}"
                             for p in sorted(space.iterdir()))  # fmt: skip
            os.write(write_end, f"{used(space)} {modes}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        size, modes = pipe.read().split()
    assert os.waitpid(child, 0)[1] == 0
    return int(size), dict(pair.split("=") for pair in modes.split(","))


def test_a_folder_closed_to_its_owner_is_counted_all_the_same():
    """Where Cadre runs as a plain user, the sandbox's files are that user's: `chmod 000` on a
    folder kept its 300 MB out of the count (the session never stopped). The count lets
    itself in, and gives the folder its mode back."""
    folder = Path(tempfile.mkdtemp(prefix="cadre-scratch-test-"))
    try:
        if os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)
        size, modes = count_as_cadres_user(folder)
    finally:
        for name in ("shut", "unsearchable"):  # opened again, for a plain user to remove
            with contextlib.suppress(OSError):
                os.chmod(folder / name, 0o700)
        shutil.rmtree(folder, ignore_errors=True)
    assert size >= 9 * MB
    assert modes == {"open": "drwxr-xr-x", "shut": "d---------", "unsearchable": "drw-------"}
