"""Processes a test started, found by a unique variable in their environment.

A test puts `ESCAPE_MARK=<its own random value>` into what it starts and looks
processes up through /proc/<pid>/environ, so it never sees, counts or kills
anything else running on the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

VARIABLE = "ESCAPE_MARK"


def new_mark() -> str:
    return uuid.uuid4().hex


def marked(mark: str) -> list[int]:
    """Live (not zombie) processes whose environment holds ESCAPE_MARK=`mark`."""
    found = []
    needle = f"{VARIABLE}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_marked(mark: str) -> None:
    """End whatever still carries `mark` (what a failed test left running)."""
    for pid in marked(mark):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
