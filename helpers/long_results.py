"""Long tool results on disk, and `§§include(<path>)` to cite them.

A tool result of at least `LEN_MIN` characters is saved as
`usr/chats/<chat id>/messages/<n>.txt`, numbered by a counter that never
reuses a number (not after deletions, not after a restart), so a path an
agent once cited keeps meaning the same text. An agent can then pass the text
on by writing `§§include(<path>)` in a tool argument instead of retyping it;
the include is expanded before the tool runs. Only files inside the chat's
folder or the work folder are read: any other path is left as written.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.files import usr_path, write_text_atomic

log = logging.getLogger(__name__)

#: Results at least this long are saved to a file the agent can include.
LEN_MIN = 500

INCLUDE = re.compile(r"§§include\(\s*([^)\n]+?)\s*\)")
_COUNTER = ".counter"


def chat_dir(context_id: str) -> Path:
    return usr_path("chats", context_id)


def work_dir() -> Path:
    return usr_path("workdir")


def include_roots(context_id: str) -> list[Path]:
    """The folders `§§include` may read from for this chat."""
    return [chat_dir(context_id), work_dir()]


def save_long_result(context_id: str, text: str) -> Path:
    """Store `text` under the next never-used number; returns its path."""
    folder = chat_dir(context_id) / "messages"
    folder.mkdir(parents=True, exist_ok=True)
    counter = folder / _COUNTER
    try:
        last = int(counter.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        last = 0
    # The highest file present also counts, in case the counter was lost.
    numbers = [int(p.stem) for p in folder.glob("*.txt") if p.stem.isdigit()]
    number = max([last, *numbers]) + 1
    path = folder / f"{number}.txt"
    write_text_atomic(path, text)
    write_text_atomic(counter, str(number))
    return path


def resolve_include(raw: str, roots: list[Path]) -> Path | None:
    """The file `raw` names if it lies inside one of `roots` (links resolved), else None.

    A relative path is taken from the first root, the chat's folder.
    """
    if not raw or "\x00" in raw:
        return None
    candidate = Path(raw).expanduser()
    if not candidate.is_absolute() and roots:
        candidate = roots[0] / candidate  # relative to the chat's folder (messages/3.txt)
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_file():
        return None
    for root in roots:
        try:
            if real.is_relative_to(root.resolve()):
                return real
        except OSError:
            continue
    return None


def has_includes(value: Any) -> bool:
    if isinstance(value, str):
        return "§§include(" in value
    if isinstance(value, dict):
        return any(has_includes(v) for v in value.values())
    if isinstance(value, list):
        return any(has_includes(v) for v in value)
    return False


def expand_includes(
    value: Any, roots: list[Path], refused: Callable[[str], None] | None = None
) -> Any:
    """`value` with every permitted `§§include(path)` in its strings replaced by the file.

    A path outside `roots`, missing or unreadable is left as written and
    reported through `refused`.
    """
    if isinstance(value, dict):
        return {k: expand_includes(v, roots, refused) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_includes(v, roots, refused) for v in value]
    if not isinstance(value, str) or "§§include(" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        raw = match.group(1).strip().strip("\"'")
        path = resolve_include(raw, roots)
        if path is None:
            if refused:
                refused(raw)
            return match.group(0)
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.warning("cannot read included file %s: %s", path, exc)
            if refused:
                refused(raw)
            return match.group(0)

    return INCLUDE.sub(replace, value)
