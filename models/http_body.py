"""An answer's body on a kept-alive HTTP/1.1 connection (for models.http_transport).

The body is framed by Content-Length, by chunks, or by the connection's end; it is read
as httpx reads a transport's stream, under the read timeout, and its connection goes
back to the pool only when the body was read to its end and both sides want to keep it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from functools import cache
from types import ModuleType


@cache
def http_module() -> ModuleType:
    """The HTTP library under the SDK: httpx2 in the SDK 3.x, httpx before."""
    try:
        import httpx2

        return httpx2
    except ImportError:
        import httpx

        return httpx


http = http_module()

#: The most a status line and its headers, or a chunk's size line, may take.
HEAD_LIMIT = 64 * 1024
#: The most one read of a body returns.
BLOCK = 64 * 1024
HEX_DIGITS = b"0123456789abcdefABCDEF"


class Connection:
    """One TCP (or TLS) connection and when it went idle."""

    __slots__ = ("reader", "writer", "idle_since")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def open(self) -> bool:
        """False once the server closed its end (the loop has seen its FIN) or we did."""
        return not (self.writer.is_closing() or self.reader.at_eof())

    def close(self) -> None:
        self.writer.close()


class _Ended(Exception):  # noqa: N818 - a signal inside this module
    """The connection ended (the server closed it, or the read timeout did)."""


class _Chunked:
    """Decodes a chunked body from the bytes as they come, in blocks of any size. What a
    block holds of the payload is returned at once: chunks that arrived together cost
    one read and one trip up the layers, not two reads each, and a long chunk streams
    through as it comes, never held whole."""

    __slots__ = ("_buffer", "_left", "_crlf", "_trailers", "ended", "spare")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._left = 0  # payload bytes of the current chunk still to come
        self._crlf = False  # a chunk's payload ended: its CRLF comes next
        self._trailers = False  # the last chunk was read: trailer lines until a blank one
        self.ended = False
        #: Bytes came after the body's end.
        self.spare = False

    def feed(self, block: bytes) -> bytes:
        """The payload `block` brings (b"" if none)."""
        buffer = self._buffer
        buffer += block
        parts = []
        at, end = 0, len(buffer)
        while at < end:
            if self._left:
                take = min(self._left, end - at)
                parts.append(bytes(buffer[at : at + take]))
                at += take
                self._left -= take
                self._crlf = not self._left
            elif self._crlf:
                if end - at < 2:
                    break
                if buffer[at : at + 2] != b"\r\n":
                    raise ValueError("a chunk longer than its size")
                at += 2
                self._crlf = False
            else:
                line_end = buffer.find(b"\n", at)
                if line_end < 0:
                    if end - at > HEAD_LIMIT:
                        raise ValueError("a chunk size line without end")
                    break
                line = bytes(buffer[at:line_end])
                at = line_end + 1
                if self._trailers:  # trailer lines, which nobody here reads
                    if not line.strip():
                        self.ended = True
                        self.spare = at < end
                        break
                    continue
                field = line.split(b";", 1)[0].strip()
                if not field or field.strip(HEX_DIGITS):
                    raise ValueError(f"not a chunk size: {line[:40]!r}")
                self._left = int(field, 16)
                self._trailers = not self._left
        del buffer[:at]
        return b"".join(parts)


class _Watch:
    """A body's read timeout: one timer for the whole body that wakes only when a read
    may have waited too long, where a timeout per read would start and cancel a timer
    for every chunk (a tenth of a streamed chunk's cost). When a read has waited
    `seconds`, it closes the connection, which ends the read; the body then raises
    httpx's ReadTimeout."""

    __slots__ = ("seconds", "loop", "since", "fired", "_abort", "_timer")

    def __init__(self, seconds: float, abort: Callable[[], None]) -> None:
        self.seconds = seconds
        self.loop = asyncio.get_running_loop()
        #: When the read now waiting began (None: no read is waiting).
        self.since: float | None = None
        self.fired = False
        self._abort = abort
        self._timer = self.loop.call_later(seconds, self._check)

    def _check(self) -> None:
        since = self.since
        if since is not None and self.loop.time() - since >= self.seconds:
            self.fired = True
            self._abort()
            return
        wait = self.seconds if since is None else since + self.seconds - self.loop.time()
        self._timer = self.loop.call_later(wait, self._check)

    def stop(self) -> None:
        self._timer.cancel()


class Body(http.AsyncByteStream):  # type: ignore[misc,name-defined]
    """An answer's body, read as httpx reads it; the connection goes back to the pool
    when the body was read to its end and both sides want to keep it."""

    _watch: _Watch | None = None

    def __init__(
        self,
        give_back: Callable[[Connection], None],
        connection: Connection,
        method: str,
        version: bytes,
        status: int,
        headers: list[tuple[bytes, bytes]],
        read_timeout: float | None,
    ) -> None:
        self.read_timeout = read_timeout
        #: Takes the connection back once the body was read to its end.
        self._give_back = give_back
        self._connection: Connection | None = connection
        values: dict[bytes, list[bytes]] = {}
        for name, value in headers:
            values.setdefault(name.lower(), []).append(value.lower())
        tokens = {t.strip() for v in values.get(b"connection", []) for t in v.split(b",")}
        self._reusable = b"close" not in tokens and (
            version == b"HTTP/1.1" or b"keep-alive" in tokens
        )
        coding = [t.strip() for v in values.get(b"transfer-encoding", []) for t in v.split(b",")]
        #: "none", "chunked", "length" or "close" (the body ends with the connection).
        self._framing = "close"
        self._length = 0
        if method == "HEAD" or status in (204, 304):
            self._framing = "none"
        elif coding:
            self._framing = "chunked" if coding[-1] == b"chunked" else "close"
        elif b"content-length" in values:
            lengths = {v.strip() for v in values[b"content-length"]}
            if len(lengths) != 1 or not next(iter(lengths)).isdigit():
                connection.close()
                raise http.RemoteProtocolError(f"a bad Content-Length: {sorted(lengths)!r}")
            self._length = int(next(iter(lengths)))
            self._framing = "length" if self._length else "none"
        if self._framing == "close":
            self._reusable = False
        self._done = self._framing == "none"

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._done or self._connection is None:
            return
        connection = self._connection
        if self.read_timeout is not None:
            self._watch = _Watch(self.read_timeout, connection.writer.transport.abort)
        try:
            if self._framing == "chunked":
                decoder = _Chunked()
                while not decoder.ended:
                    if part := decoder.feed(await self._read(connection.reader)):
                        yield part
                if decoder.spare:  # bytes after the body's end: nobody asked for them
                    self._reusable = False
            elif self._framing == "length":
                left = self._length
                while left:
                    part = await self._read(connection.reader, left)
                    left -= len(part)
                    yield part
            else:
                while True:
                    part = await self._read(connection.reader)
                    yield part
        except _Ended:
            self._timed_out()
            if self._framing != "close":
                raise http.RemoteProtocolError(
                    "the server closed the connection before the body was complete"
                ) from None
        except ValueError as exc:
            raise http.RemoteProtocolError(f"a malformed chunked body: {exc}") from exc
        except OSError as exc:
            self._timed_out()
            raise http.ReadError(str(exc) or type(exc).__name__) from exc
        finally:
            if self._watch is not None:
                self._watch.stop()
        self._done = True

    async def _read(self, reader: asyncio.StreamReader, most: int = BLOCK) -> bytes:
        """What the connection has for us now (at least a byte, at most `most`), waiting
        for it under the read timeout (see _Watch); _Ended at the connection's end."""
        watch = self._watch
        if watch is not None:
            watch.since = watch.loop.time()
        part = await reader.read(min(most, BLOCK))
        if watch is not None:
            watch.since = None
        if not part:
            raise _Ended
        return part

    def _timed_out(self) -> None:
        """Raise ReadTimeout when the watch ended the read (it closed the connection)."""
        if self._watch is not None and self._watch.fired:
            raise http.ReadTimeout(f"no data within {self._watch.seconds:g} s")

    async def aclose(self) -> None:
        if self._watch is not None:
            self._watch.stop()
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._done and self._reusable and connection.open():
            self._give_back(connection)
        else:  # read only in part: what is left of it would be read as the next answer
            connection.close()
