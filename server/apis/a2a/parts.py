"""What an A2A message brings Agent 0: its text parts as the message, its files (parts
with bytes) as attachments saved in the chat's folder as the page's are, and its data
parts (structured JSON) as JSON blocks after the text.

A file named by an address only (a `url` part) is refused in words rather than fetched:
Cadre would fetch it from inside the network it runs in for whoever holds a key (send its
bytes instead). Nothing is dropped without a word: the task is rejected, and the client
told why, before any chat is made.
"""

from __future__ import annotations

import json
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path

from a2a.types.a2a_pb2 import Message
from google.protobuf.json_format import MessageToDict
from werkzeug.utils import secure_filename

from helpers.errors import UserError
from server.routes.payloads import MESSAGE_LIMIT

#: Files one message may attach (as Agent Zero's API allows).
FILES_LIMIT = 20


@dataclass(frozen=True)
class Inbound:
    """The message for Agent 0, and the files it attaches (name, bytes)."""

    text: str
    files: list[tuple[str, bytes]] = field(default_factory=list)


def read_parts(message: Message) -> Inbound:
    """The message's parts as text and files; UserError in plain words when it cannot be
    sent as it is (no content, a file by address, too many files, too long)."""
    texts: list[str] = []
    files: list[tuple[str, bytes]] = []
    for number, part in enumerate(message.parts, start=1):
        kind = part.WhichOneof("content")
        if kind == "text":
            texts.append(part.text)
        elif kind == "raw":
            files.append((_file_name(part.filename, part.media_type, len(files) + 1), part.raw))
        elif kind == "data":
            data = json.dumps(MessageToDict(part.data), indent=1, ensure_ascii=False)
            texts.append(f"```json\n{data}\n```")
        elif kind == "url":
            raise UserError(f"part {number} names a file by its address ({part.url[:200]}):"
                            " Cadre does not fetch files for a task; send its bytes")  # fmt: skip
    text = "\n".join(t for t in texts if t.strip()).strip()
    if not text and not files:
        raise UserError("send the task as a text part (files may come with it)")
    if len(text) > MESSAGE_LIMIT:
        raise UserError(f"the task is over {MESSAGE_LIMIT} characters: send a shorter one")
    if len(files) > FILES_LIMIT:
        raise UserError(f"the task attaches {len(files)} files: send at most {FILES_LIMIT}")
    if not text:  # files alone: the agent is told what came
        text = "The attached file" + ("s" if len(files) > 1 else "") + " came with this task."
    return Inbound(text, files)


def _file_name(given: str, media_type: str, number: int) -> str:
    """A safe name for the part's file: its own where it survives as a file name (cut to
    a file system's length where it is saved: attachments.py), else "file-2.pdf"; the
    extension its name or else its type gives is kept."""
    base = given.replace("\\", "/").rsplit("/", 1)[-1]
    raw_suffix = Path(base).suffix[1:]
    suffix = f".{secure_filename(raw_suffix)}" if secure_filename(raw_suffix) else ""
    if not suffix:
        kind = media_type.split(";")[0].strip()
        suffix = (mimetypes.guess_extension(kind) or "") if kind else ""
    name = secure_filename(base)
    if name and name != suffix[1:] and (name.endswith(suffix) or not raw_suffix):
        return name if "." in name or not suffix else name + suffix
    return f"file-{number}{suffix}"  # nothing of its name survived (other scripts)
