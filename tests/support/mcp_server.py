"""A real MCP server for tests, written with the SDK's own server side.

Run as `python -m tests.support.mcp_server stdio --pid-file F` (a local server,
as a desktop client starts one) or `... http --port N --pid-file F` (streamable
HTTP; SSE with `sse`). Each writes its process id to the pid file at start, so
a test can kill it or check that no server outlived Cadre.

Tools: `add` (arguments), `fail` (raises: the result is an error), `hang`
(never answers: the caller's timeout must cut it), `image` (a small PNG),
`resource` (an embedded text resource), `long_text` (a long result),
`echo_secret` (says whether it got the secret's value), `who` (over HTTP: the
`X-Person` header its caller sent).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import sys
import zlib
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import EmbeddedResource, TextResourceContents

server = MCPServer("cadre-test")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def fail(reason: str = "broken") -> str:
    """A tool that always fails."""
    raise ToolError(f"the tool failed: {reason}")


@server.tool()
async def hang() -> str:
    """A tool that never answers."""
    await asyncio.sleep(3600)
    return "never"


@server.tool()
def image() -> Image:
    """A 2x2 red PNG."""
    return Image(data=tiny_png(), format="png")


@server.tool()
def resource() -> EmbeddedResource:
    """A text resource."""
    contents = TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="notes")
    return EmbeddedResource(type="resource", resource=contents)


@server.tool()
def long_text(lines: int = 100) -> str:
    """A long text."""
    return "".join(f"Line {n}: something the tool found.\n" for n in range(lines))


@server.tool()
def echo_secret(token: str) -> str:
    """Says whether it was given the token it expects."""
    return "token accepted" if token == "s3cr3t-value" else f"wrong token {token!r}"


@server.tool()
def who(ctx: Context) -> str:
    """Who the caller says it is: its X-Person header (over HTTP)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return f"you are {headers.get('x-person', 'nobody') if headers is not None else 'nobody'}"


def tiny_png() -> bytes:
    """A valid 2x2 red PNG, made here so no binary file lives in the tests."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pid-file", default="")
    args = parser.parse_args(argv)
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    print("test MCP server starting", file=sys.stderr, flush=True)
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("sse", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main(sys.argv[1:])
