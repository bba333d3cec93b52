"""An MCP tool's result as Cadre uses it: text for the model, files for the rest.

Text parts are joined; an image (or audio) is saved as a file in the chat's
`mcp/` folder and named in the text, so the model knows of it and the log
shows it; an embedded resource is saved as a file too; a resource link is
named with its address. Structured content without text is given as JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
import uuid
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import urlparse

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from helpers.folders import MCP, mcp_dir

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class McpResult:
    """What a call returned: the text for the model, the files saved (paths in the chat's
    folder, `mcp/…`), and whether the server said the call failed."""

    text: str
    is_error: bool = False
    images: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def read_result(result: CallToolResult, chat_id: str) -> McpResult:
    """`result` as text and saved files (writes files: call it off the event loop)."""
    read = McpResult(text="", is_error=bool(result.is_error))
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, TextContent):
            parts.append(item.text)
        elif isinstance(item, ImageContent | AudioContent):
            path = _save(chat_id, _decode(item.data), item.type, item.mime_type)
            (read.images if isinstance(item, ImageContent) else read.files).append(path)
            parts.append(f"[{item.type} saved as {path}]")
        elif isinstance(item, EmbeddedResource):
            path = _save_resource(chat_id, item.resource)
            read.files.append(path)
            parts.append(f"[resource {item.resource.uri} saved as {path}]")
        elif isinstance(item, ResourceLink):
            parts.append(f"[resource link: {item.name} {item.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    read.text = "\n".join(parts)
    return read


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data.encode("utf-8")  # not base64 after all: kept as the server sent it


def _save_resource(chat_id: str, resource: TextResourceContents | BlobResourceContents) -> str:
    name = PurePosixPath(urlparse(str(resource.uri)).path).name or "resource"
    if isinstance(resource, TextResourceContents):
        return _save(chat_id, resource.text.encode("utf-8"), name, resource.mime_type)
    return _save(chat_id, _decode(resource.blob), name, resource.mime_type)


def _save(chat_id: str, data: bytes, name: str, mime_type: str | None) -> str:
    """Save `data` under a new name in the chat's `mcp/` folder; its path in the chat's folder."""
    stem = _UNSAFE.sub("-", name).strip("-.")[:60] or "file"
    if "." not in stem:
        stem += mimetypes.guess_extension(mime_type or "") or ".bin"
    folder = mcp_dir(chat_id)
    folder.mkdir(parents=True, exist_ok=True)
    file_name = f"{uuid.uuid4().hex[:8]}-{stem}"
    with open(folder / file_name, "xb") as handle:  # a new name: nothing is overwritten
        handle.write(data)
    return f"{MCP}/{file_name}"
