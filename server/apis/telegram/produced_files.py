"""Files an answer names, sent along as Telegram documents.

An agent that made a file for the person says so in its answer ("saved as report.pdf",
"`out/chart.png`"). Each word of the answer that names a file of the chat's work folder
(relative to it, or its full path), confined as every path from a model is
(helpers/confine.py: no link leads out, no `..`), and small enough for the Bot API
(`MAX_BYTES`), is sent, at most `MOST` of them, in the order named. A path outside the work
folder is never sent, whatever the answer says.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.confine import PathRefused, read_inside, resolve_inside

#: The Bot API's largest upload (sendDocument): 50 MB.
MAX_BYTES = 50 * 1024 * 1024
#: The most documents one answer sends.
MOST = 10

#: A word that may be a path: a name with an extension, possibly with folders before it.
_CANDIDATE = re.compile(r"(?:[\w~./-]*/)?[\w.-]+\.[A-Za-z0-9]{1,8}\b")


def named_files(answer: str, work_dir: Path) -> list[Path]:
    """The files of `work_dir` that `answer` names (real paths, each once)."""
    root = work_dir.resolve()
    found: list[Path] = []
    for match in _CANDIDATE.finditer(answer):
        path = _in_folder(match.group(0).rstrip("."), root)
        if path is not None and path not in found:
            found.append(path)
            if len(found) == MOST:
                break
    return found


def _in_folder(word: str, root: Path) -> Path | None:
    try:
        path = resolve_inside(word, root)  # a full path too, when it leads into the folder
    except PathRefused:
        return None
    try:
        return path if path.is_file() and 0 < path.stat().st_size <= MAX_BYTES else None
    except OSError:
        return None


def read_file(path: Path, work_dir: Path) -> bytes:
    """The bytes of a named file, checked again as it is opened (a link swapped in since,
    a hard link, Cadre's own files: PathRefused)."""
    return read_inside(path, [work_dir.resolve()], MAX_BYTES)
