"""Long tool results on disk, and `§§include(<path>)` to cite them.

A tool result of at least `LEN_MIN` characters is saved as
`usr/chats/<chat id>/messages/<n>.txt`, numbered by a counter that never
reuses a number (not after deletions, not after a restart), so a path an
agent once cited keeps meaning the same text. An agent can then pass the text
on by writing `§§include(<path>)` in a tool argument instead of retyping it;
the include is expanded before the tool runs. Only files inside the chat's
folder or the work folder are read: any other path is left as written.
A result from outside is saved marked as data (core/prompt/untrusted.py), so the
text an include brings keeps its marking wherever it goes.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.prompt import untrusted
from helpers.confine import FileRefused, PathRefused, check_name, open_inside
from helpers.files import write_text_atomic
from helpers.folders import chat_dir, messages_dir, work_dir
from helpers.nested import any_string, map_strings
from helpers.valid_text import valid_text

log = logging.getLogger(__name__)

#: Results at least this long are saved to a file the agent can include.
LEN_MIN = 500

INCLUDE = re.compile(r"§§include\(\s*([^)\n]+?)\s*\)")
_COUNTER = ".counter"


#: Longest tool result kept whole in history; a longer one keeps its head and tail.
HISTORY_LIMIT = 20_000
#: Of a cut result, the share kept from its start (the rest from its end, where
#: errors and summaries usually are).
HEAD_SHARE = 0.3

#: Largest file `§§include` inlines; a bigger one would swamp the prompt and the log.
INCLUDE_LIMIT = 512 * 1024


def include_roots(context_id: str, work_setting: str = "", space: Path | None = None) -> list[Path]:
    """The folders `§§include` may read from for this chat (its own folder first): its
    owner's work folder (`space`: theirs, helpers/folders.py `work_dir`)."""
    return [chat_dir(context_id), work_dir(work_setting, space)]


def save_long_result(context_id: str, text: str) -> str:
    """Store `text` under the next never-used number; returns its path in the chat's folder.

    The number is claimed by creating the file exclusively, so two writers
    can never take the same one; the counter file keeps numbers from being
    reused after files are deleted.
    """
    text = valid_text(text)  # a file on disk is UTF-8: no lone surrogate gets that far
    folder = messages_dir(context_id)
    folder.mkdir(parents=True, exist_ok=True)
    counter = folder / _COUNTER
    try:
        number = int(counter.read_text(encoding="utf-8").strip() or 0)
    except (FileNotFoundError, ValueError):
        # No counter: start after the highest file present.
        number = max((int(p.stem) for p in folder.glob("*.txt") if p.stem.isdigit()), default=0)
    while True:
        number += 1
        try:
            with open(folder / f"{number}.txt", "x", encoding="utf-8") as handle:
                handle.write(text)
            break
        except FileExistsError:
            continue
    write_text_atomic(counter, str(number))
    return f"messages/{number}.txt"


def cut_middle(text: str, notice: Callable[[int], str], limit: int = HISTORY_LIMIT) -> str:
    """`text` if it fits `limit`, else its head and tail around `notice(characters cut)`
    (a block of text from outside stays marked: core/prompt/untrusted.py)."""
    if len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    return untrusted.cut(text, head, limit - head, notice(len(text) - limit))


class IncludeRefused(PathRefused):
    """Why a `§§include` path was not read."""


def read_include(raw: str, roots: list[Path]) -> str:
    """The text of the file `raw` names, if it lies inside one of `roots`.

    A relative path is looked for in each root in turn (the chat's first).
    """
    try:
        given = Path(check_name(raw.strip())).expanduser()
    except PathRefused as exc:
        raise IncludeRefused(str(exc)) from None
    candidates = [given] if given.is_absolute() else [root / given for root in roots]
    fd, error = -1, "no such file"
    for candidate in candidates:
        try:
            # Non-blocking: a FIFO planted in the folder must not hang the agent.
            fd = open_inside(candidate, os.O_RDONLY | os.O_NONBLOCK, roots)
            break
        except FileRefused as exc:
            raise IncludeRefused(str(exc)) from None
        except PathRefused:
            raise IncludeRefused("outside this chat's folder and the work folder") from None
        except OSError as exc:
            error = exc.strerror or str(exc)
    if fd < 0:
        raise IncludeRefused(f"cannot be opened ({error})")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IncludeRefused("not a regular file")
        data = handle.read(INCLUDE_LIMIT + 1)
    if len(data) > INCLUDE_LIMIT:
        raise IncludeRefused(f"larger than the include limit of {INCLUDE_LIMIT // 1024} KB")
    return data.decode("utf-8", errors="replace")


def has_includes(value: Any) -> bool:
    """True when any string in `value` (nested dicts and lists too) holds a `§§include(`."""
    return any_string(value, lambda text: "§§include(" in text)


def expand_includes(
    value: Any, roots: list[Path], refused: Callable[[str, str], None] | None = None
) -> Any:
    """`value` with every permitted `§§include(path)` in its strings replaced by the file.

    A path that may not or cannot be read is left as written and reported
    through `refused(path, reason)`.
    """

    def replace(match: re.Match[str]) -> str:
        raw = match.group(1).strip().strip("\"'")
        try:
            return read_include(raw, roots)
        except IncludeRefused as exc:
            if refused:
                refused(raw, str(exc))
            return match.group(0)

    return map_strings(value, lambda text: INCLUDE.sub(replace, text) if "§§include(" in text
                       else text)  # fmt: skip
