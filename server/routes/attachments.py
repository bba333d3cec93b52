"""Files users attach to messages: stored in the chat's folder, never outside it."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from werkzeug.utils import secure_filename

from helpers.confine import PathRefused, inside, resolve_inside
from helpers.errors import UserError
from helpers.folders import chat_dir

FOLDER = "attachments"
#: Longest name an attachment is saved under (a file system takes 255 bytes; room is left
#: for the "-2" that keeps two of one name apart).
NAME_LIMIT = 200


def save_attachment(chat_id: str, filename: str, stream: IO[bytes]) -> str:
    """Store an upload; returns its path relative to the chat's folder."""
    name = _short(secure_filename(filename) or "file")
    folder = chat_dir(chat_id) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    stem, suffix = Path(name).stem, Path(name).suffix
    target = folder / name
    counter = 1
    while target.exists():  # never overwrite an earlier attachment
        target = folder / f"{stem}-{counter}{suffix}"
        counter += 1
    with open(target, "xb") as handle:
        while chunk := stream.read(1 << 20):
            handle.write(chunk)
    return f"{FOLDER}/{target.name}"


def _short(name: str) -> str:
    """`name` (ASCII, from secure_filename) cut to NAME_LIMIT, its extension kept."""
    if len(name) <= NAME_LIMIT:
        return name
    suffix = Path(name).suffix if len(Path(name).suffix) <= 16 else ""
    return name[: NAME_LIMIT - len(suffix)] + suffix


def resolve_attachments(chat_id: str, paths: list[str]) -> list[str]:
    """Absolute paths of a message's attachments; each must be a file the chat holds."""
    folder = chat_dir(chat_id)
    resolved = []
    for raw in paths:
        try:
            candidate = resolve_inside(raw, folder, what="this chat's folder")
        except PathRefused as exc:
            raise UserError(f"attachment refused: {exc}") from None
        if not inside(candidate, [folder / FOLDER]) or not candidate.is_file():
            raise UserError(f"attachment {raw!r} is not a file of this chat")
        resolved.append(str(candidate))
    return resolved


def attach(chat_id: str, files: Iterable[tuple[str, bytes]]) -> list[str]:
    """Store each (name, bytes) as an attachment of the chat: their absolute paths, for a
    `UserMessage` (the APIs' and the Telegram bot's files, attached as the page's are)."""
    saved = [save_attachment(chat_id, name, io.BytesIO(data)) for name, data in files]
    return resolve_attachments(chat_id, saved)
