"""What a hostile MCP server returns cannot write outside the chat's `mcp/` folder."""

from __future__ import annotations

import base64

from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextResourceContents,
)

from helpers.folders import chat_dir
from mcp_client.results import read_result

NAMES = ["../../x", "/etc/passwd", "a\x00b.txt", "..", "n" * 5000, "%2e%2e%2fx", "C:\\evil.bat"]


def test_hostile_names_and_types_stay_in_the_chats_folder(usr_dir):
    blob = base64.b64encode(b"data").decode()
    content = [
        EmbeddedResource(type="resource", resource=TextResourceContents(
            uri=f"file:///{name}", text="t", mime_type="text/plain"))
        for name in NAMES
    ] + [
        EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="x://h/..%2F..%2Fy", blob=blob, mime_type="application/x-sh")),
        ImageContent(type="image", data="not base64 at all!", mime_type="text/html"),
        ImageContent(type="image", data=blob, mime_type="../../../weird"),
    ]  # fmt: skip
    read = read_result(CallToolResult(content=content), "chat1")
    folder = (chat_dir("chat1") / "mcp").resolve()
    saved = sorted(folder.iterdir())
    assert len(saved) == len(NAMES) + 3 == len(read.files) + len(read.images)
    for path in saved:
        assert path.resolve().parent == folder
        assert len(path.name) <= 80 and "\x00" not in path.name and not path.name.startswith(".")
    written = [p.resolve() for p in usr_dir.rglob("*") if p.is_file()]
    assert [p for p in written if p.parent != folder] == []
