"""Chats on disk: one versioned `usr/chats/<id>/chat.json` per chat, and its summary.

The file holds the chat (id, name, times, pause and run state), every agent
and the whole log: what it holds, and how a live chat becomes one and back,
is `core.chat_record`; this module only reads, writes and lists the files.
A file is written atomically (temporary file in the same folder, fsync,
`os.replace`), so whatever moment the process dies, it is the old one or the
new one.

Older files are upgraded on load (`core.chat_migrations`). A file that cannot
be read (cut short, not JSON, wrong shape, unknown version) is moved to
`usr/chats/_damaged/` with a note saying why; it never stops anything else.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from core.chat_migrations import migrate
from core.chat_record import ChatFields, ChatFile
from helpers.files import write_text_atomic
from helpers.folders import CHAT_FILE, chat_file, chats_dir
from helpers.valid_text import valid_text

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
DAMAGED = "_damaged"


class DamagedChat(BaseModel):
    """A chat file that could not be loaded, and where it went."""

    id: str
    reason: str
    moved_to: str


# -- reading and writing -------------------------------------------------------


def parse(text: str) -> ChatFile:
    """A chat file from its text; ValueError says what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError as exc:
        raise ValueError("not JSON this program can read (nested too deeply)") from exc
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    try:
        return ChatFile.model_validate(migrate(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise ValueError(f"wrong shape: {where}: {first['msg']}") from exc
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"wrong shape: {type(exc).__name__}: {exc}") from exc


def read_chat(chat_id: str) -> ChatFile:
    """Read one saved chat; ValueError (or OSError) when it cannot be."""
    raw = chat_file(chat_id).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not JSON (not UTF-8 text at byte {exc.start})") from exc
    return parse(text)


def write_chat(chat: ChatFile, path: Path | None = None) -> str:
    """Write atomically; the reader sees the old file or the new one, never half.

    A small `summary.json` follows, stamped with the chat file it describes, so
    the next start can list the chat without reading its whole history. It is
    not flushed to the disk: a summary a machine crash left empty or stale is
    rebuilt from chat.json at the next start (`scan`), so a second flush per
    save (a few milliseconds on every step) buys nothing.

    Writing is total: a chat that cannot be written as it is gets `repaired`
    first. Returns "" or, then, what had to be repaired (only OSError escapes).
    `path`: where, fixed by whoever took the snapshot (default: the chat's file now).
    """
    path = path or chat_file(chat.id)
    chat, text, problem = encode(chat)
    write_text_atomic(path, text)
    header = ChatHeader.of(chat, _stamp(path))
    write_text_atomic(path.with_name(SUMMARY_FILE), header.model_dump_json(), fsync=False)
    return problem


def encode(chat: ChatFile) -> tuple[ChatFile, str, str]:
    """The chat as JSON: `(chat, text, "")`, or the repaired chat, its text and why."""
    try:
        return chat, chat.model_dump_json(), ""
    except (ValueError, TypeError) as exc:  # PydanticSerializationError is a ValueError
        fixed = repaired(chat)
        return fixed, fixed.model_dump_json(), str(exc)


def repaired(chat: ChatFile) -> ChatFile:
    """A copy of `chat` that can be written: text made valid, what is not data as its repr.

    The last resort behind the checks where text enters (history, the log): if
    something still slipped through (a lone surrogate, an object a plugin tool
    kept in agent data), the chat is saved without it rather than not at all.
    """
    data = chat.model_dump(mode="python")
    text = json.dumps(data, ensure_ascii=False, default=repr)
    return ChatFile.model_validate_json(valid_text(text))


def _stamp(path: Path) -> str:
    info = path.stat()
    return f"{info.st_size}:{info.st_mtime_ns}"


def is_saved(chat_id: str) -> bool:
    """Is there a saved chat of this id? Any other name (a path, a hidden folder) is none."""
    plain = 0 < len(chat_id) <= 100 and not chat_id.startswith(("_", "."))
    plain = plain and not any(mark in chat_id for mark in ("/", "\\", "\0"))
    return plain and chat_file(chat_id).is_file()


def file_stamp(chat_id: str) -> str:
    """The stamp of the chat's file now (any write makes a new one: it is replaced whole,
    `write_chat`); OSError when there is none."""
    info = chat_file(chat_id).stat()
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"


def summary_stamp(chat_id: str) -> str:
    """The stamp a current summary of the chat carries (`ChatHeader.stamp`); OSError when
    the chat has no file."""
    return _stamp(chat_file(chat_id))


def header_of(chat_id: str) -> ChatHeader:
    """The summary of a saved chat read whole (its summary file is missing or stale)."""
    return ChatHeader.of(load_chat(chat_id), _stamp(chat_file(chat_id)))


class ChatHeader(ChatFields):
    """What the chat list needs of a saved chat, without its history and log."""

    #: `<size>:<mtime_ns>` of the chat.json it was written with; any other file is newer.
    stamp: str = ""

    @classmethod
    def of(cls, chat: ChatFile, stamp: str) -> ChatHeader:
        return cls(**chat.model_dump(include=set(ChatFields.model_fields)), stamp=stamp)


def read_header(chat_id: str) -> ChatHeader:
    """The summary of a saved chat; ValueError when it is missing or older than chat.json."""
    path = chat_file(chat_id)
    try:
        header = ChatHeader.model_validate_json(path.with_name(SUMMARY_FILE).read_bytes())
    except (OSError, ValidationError) as exc:
        raise ValueError(f"no usable summary: {exc}") from exc
    if header.id != chat_id or header.stamp != _stamp(path):
        raise ValueError("the summary does not describe the current chat.json")
    return header


def saved_chat_ids() -> list[str]:
    folder = chats_dir()
    if not folder.is_dir():
        return []
    return sorted(
        p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))
    )


def set_aside(chat_id: str, reason: str) -> DamagedChat:
    """Move a chat that cannot be read to `_damaged/`, with a note of why; never lose it."""
    source = chats_dir() / chat_id
    target_root = chats_dir() / DAMAGED
    target_root.mkdir(parents=True, exist_ok=True)
    target = target_root / f"{chat_id}-{int(time.time())}"
    shutil.move(str(source), str(target))
    (target / "DAMAGED.txt").write_text(f"{reason}\n", encoding="utf-8")
    log.error("chat %s is damaged (%s); moved to %s", chat_id, reason, target)
    return DamagedChat(id=chat_id, reason=reason, moved_to=str(target))


def scan() -> tuple[list[ChatHeader], list[str]]:
    """At start: summaries of the saved chats, ids whose summary must be rebuilt, damage.

    A chat whose summary is current is listed from it alone (its history is
    read when it is opened). One without (an older version, a crash between
    the two writes) is read whole by the caller. Call once at start, before
    any chat runs: it also removes the temporary files of writes that a
    killed process left unfinished.
    """
    headers: list[ChatHeader] = []
    unknown: list[str] = []
    for chat_id in saved_chat_ids():
        folder = chats_dir() / chat_id
        # Temporary files of writes a killed process never finished: never the real files.
        for stale in folder.glob(".*.tmp"):
            stale.unlink(missing_ok=True)
        if not (folder / CHAT_FILE).is_file():
            continue  # a folder with only saved results (a chat never saved): nothing to list
        try:
            headers.append(read_header(chat_id))
        except ValueError:
            unknown.append(chat_id)
    return headers, unknown


def load_chat(chat_id: str) -> ChatFile:
    """One saved chat, whole; ValueError (or OSError) says why it cannot be read."""
    chat = read_chat(chat_id)
    if chat.id != chat_id:
        raise ValueError(f"the file belongs to chat {chat.id!r}")
    return chat


def delete_chat_files(chat_id: str) -> None:
    folder = chats_dir() / chat_id
    if folder.is_dir():
        shutil.rmtree(folder)
