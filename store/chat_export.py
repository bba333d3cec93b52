"""A chat as one JSON document to share, and such a document taken back as a new chat.

Import also takes Agent Zero's chat files (store/agent_zero/chat.py).

An export is the chat file plus its saved long results and the images its
messages show (base64), without what must not leave this machine (setting
overrides, paths of files agents read). An import trusts nothing in the
document: it is checked whole, narrowed to what is safe to take from a
stranger, and written in a staging folder that is moved into place in one step.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from core.chat_migrations import migrate
from core.chat_record import ChatFile
from helpers.chat_models import MODEL_KEY
from helpers.confine import PathRefused, read_inside
from helpers.errors import UserError
from helpers.folders import CHAT_FILE, MESSAGES, chat_dir, chats_dir, messages_dir
from helpers.images import IMAGE_FOLDERS, MAX_FILE_BYTES, ImageRefused, check
from helpers.model_presets import PRESET_KEY
from helpers.valid_text import valid_value
from store.agent_zero import chat as agent_zero_chat
from store.persist_chat import encode

log = logging.getLogger(__name__)


#: Largest saved result an export carries (they are written by Cadre, far smaller).
EXPORT_FILE_LIMIT = 64 * 1024 * 1024
#: How an image a message shows is named in an export: a file of the chat's image folders.
_IMAGE_PATH = re.compile(rf"(?:{'|'.join(IMAGE_FOLDERS)})/[A-Za-z0-9_-][A-Za-z0-9._-]{{0,159}}")


@dataclass
class ExportFiles:
    """The files an import brings: saved long results by number, images by their path."""

    messages: dict[int, str] = field(default_factory=dict)
    images: dict[str, bytes] = field(default_factory=dict)


def _history_images(history: dict[str, Any]) -> list[dict[str, Any]]:
    """The image records of a saved history's messages (core.prompt.history.Message.images)."""
    topics = [*history.get("topics", []), history.get("current", {})]
    found = []
    for topic in topics:
        for message in topic.get("messages", []) if isinstance(topic, dict) else []:
            images = message.get("images", []) if isinstance(message, dict) else []
            found += [image for image in images if isinstance(image, dict)]
    return found


def _export_images(chat: ChatFile) -> dict[str, str]:
    """The images the chat's messages show, base64; one gone or refused is left out."""
    folder = chat_dir(chat.id)
    roots = [folder / name for name in IMAGE_FOLDERS]
    images = {}
    for agent in chat.agents:
        for image in _history_images(agent.history):
            path = str(image.get("path", ""))
            if path in images or not _IMAGE_PATH.fullmatch(path):
                continue
            try:
                raw = read_inside(folder / path, roots, MAX_FILE_BYTES)
                check(raw, path)
            except (PathRefused, ImageRefused, OSError) as exc:
                log.warning("chat %s: image %s left out of the export: %s", chat.id, path, exc)
                continue
            images[path] = base64.b64encode(raw).decode("ascii")
    return images


def export_chat(chat: ChatFile) -> dict[str, Any]:
    """One JSON document: the chat file plus its saved long results."""
    messages = messages_dir(chat.id)
    files = {}
    if messages.is_dir():
        for path in sorted(messages.glob("*.txt")):
            try:
                # Through the confined reader: a command may have planted a link here.
                raw = read_inside(path, [messages], EXPORT_FILE_LIMIT)
            except (PathRefused, OSError) as exc:
                log.warning("chat %s: %s left out of the export: %s", chat.id, path.name, exc)
                continue
            files[f"messages/{path.name}"] = raw.decode("utf-8", errors="replace")
    data = json.loads(encode(chat)[1])  # what the chat file would hold, repaired if need be
    for agent in data["agents"]:
        # Setting overrides may hold keys and addresses: never in a file meant to be shared;
        # nor what an agent read of this machine's files (their paths). The model preset
        # the chat chose, or the model it chose by name, is a name (its keys stay in the
        # settings): shown.
        chosen = {key: agent["overrides"][key] for key in (PRESET_KEY, MODEL_KEY)
                  if agent["overrides"].get(key)}  # fmt: skip
        agent["overrides"] = {"agent_profile": agent["profile"], **chosen}
        agent["file_reads"] = {}
        agent["data"] = _without_local(agent.get("data") or {})
    if chat.home_profile:  # Agent 0's own profile is the chat's one, not the one handed to
        data["agents"][0]["overrides"]["agent_profile"] = chat.home_profile
    return {"cadre_export": 1, "chat": data, "files": files, "images": _export_images(chat)}


#: An agent's data that holds this machine's files (tools/text_editor.py `WROTE`: their
#: real paths, and digests that make a file read as the agent's own words): never in a
#: file meant to be shared, never taken from one.
LOCAL_DATA = ("text_editor_wrote",)


def _without_local(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in LOCAL_DATA}


_EXPORTED_FILE = re.compile(r"messages/(\d{1,9})\.txt", re.ASCII)
#: Largest chat name kept from an import.
IMPORT_NAME_LIMIT = 120


def read_export(document: Any, new_id: str) -> tuple[ChatFile, ExportFiles]:
    """Check an exported chat completely; UserError says why a document is refused.

    Nothing is written here. What an export may carry is narrowed to what is
    safe to take from a stranger: each agent keeps only its profile (no
    model address, key or work folder from the file), the chat belongs to no
    project (a name in the file must not make it join one here, with its
    settings and memories), and it is not running.
    """
    document = valid_value(document)  # JSON escapes may hold lone surrogates
    if agent_zero_chat.is_agent_zero_chat(document):
        try:
            return agent_zero_chat.read_import(document, new_id), ExportFiles()
        except ValueError as exc:
            raise UserError(f"the chat cannot be imported: {exc}") from None
    if not isinstance(document, dict) or document.get("cadre_export") != 1:
        raise UserError(
            "not a Cadre chat export (the 'cadre_export' marker is missing) nor an Agent Zero"
            " chat file"
        )
    raw = document.get("chat")
    files = document.get("files") or {}
    if not isinstance(raw, dict) or not isinstance(files, dict):
        raise UserError("a Cadre chat export needs a 'chat' object and a 'files' object")
    contents: dict[int, str] = {}
    for name, content in files.items():
        match = _EXPORTED_FILE.fullmatch(str(name))
        if match is None or not isinstance(content, str):
            raise UserError(f"unexpected file in the export: {str(name)[:80]!r}")
        contents[int(match.group(1))] = content
    try:
        chat = ChatFile.model_validate(migrate({**raw, "id": new_id}))
    except (ValueError, TypeError, ValidationError) as exc:
        raise UserError(f"the exported chat cannot be read: {exc}") from exc
    images = _read_images(document.get("images") or {})
    for agent in chat.agents:
        for image in _history_images(agent.history):
            if not _IMAGE_PATH.fullmatch(str(image.get("path", ""))):
                raise UserError(f"unexpected image path in the export: {str(image)[:80]!r}")
    agents = [
        agent.model_copy(
            update={
                "overrides": {"agent_profile": agent.profile},
                "file_reads": {},
                "handed": None,
                "data": _without_local(agent.data),
            }
        )  # fmt: skip
        for agent in chat.agents
    ]
    if chat.home_profile:  # a handoff: Agent 0's own profile is the chat's, as on export
        agents[0].overrides["agent_profile"] = chat.home_profile
    chat = chat.model_copy(
        update={
            "agents": agents,
            "name": " ".join(chat.name.split())[:IMPORT_NAME_LIMIT],
            "project": None,
            "running": False,
            "working_agent": None,
            "busy": [],
        }
    )
    return chat, ExportFiles(contents, images)


def _read_images(raw: Any) -> dict[str, bytes]:
    """An export's images, each a checked image under a plain name of the image folders."""
    if not isinstance(raw, dict):
        raise UserError("a Cadre chat export's 'images' must be an object")
    images = {}
    for name, content in raw.items():
        if not _IMAGE_PATH.fullmatch(str(name)) or not isinstance(content, str):
            raise UserError(f"unexpected image in the export: {str(name)[:80]!r}")
        if len(content) > MAX_FILE_BYTES * 4 // 3 + 4:
            raise UserError(f"the image {name} in the export is larger than an image may be")
        try:
            data = base64.b64decode(content, validate=True)
            check(data, name)
        except (binascii.Error, ValueError) as exc:  # ImageRefused is a ValueError
            raise UserError(f"the image {name} in the export cannot be taken: {exc}") from None
        images[name] = data
    return images


def store_import(chat: ChatFile, files: ExportFiles) -> None:
    """Write a checked import: built in a temporary folder, then moved into place whole."""
    final = chats_dir() / chat.id
    staging = chats_dir() / f".import-{chat.id}"
    try:
        messages = staging / MESSAGES
        messages.mkdir(parents=True)
        contents = files.messages
        for number, content in contents.items():
            (messages / f"{number}.txt").write_text(content, encoding="utf-8")
        if contents:
            (messages / ".counter").write_text(str(max(contents)), encoding="utf-8")
        for name, data in files.images.items():
            (staging / name).parent.mkdir(exist_ok=True)
            (staging / name).write_bytes(data)
        (staging / CHAT_FILE).write_text(chat.model_dump_json(), encoding="utf-8")
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
