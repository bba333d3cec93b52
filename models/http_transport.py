"""A lean HTTP/1.1 transport under the `openai` SDK: asyncio's streams move the bytes.

Why: with 50 chats streaming at once, the SDK's own HTTP stack (httpx over httpcore,
h11 and anyio) took 8-20 ms of CPU per call on a 2-core machine, most of it in a
connection pool that checks every kept connection on each request; asyncio's streams do
the same work for about 1.5 ms (`python -m bench models`). The SDK and httpx above keep
everything else: the request they build, redirects, gzip, the SDK's typed errors and
the error classes our readers know (`models.sse`, `models.provider_faults`).

What this transport does: one request at a time on a kept-alive connection (a pool per
scheme, host and port, newest first, bounded like httpx's), the answer framed by
Content-Length, by chunks, or by the connection's end; TLS through the SSL context
httpx would make (`verify`, `cert`, SSL_CERT_FILE); httpx's connect, read and write
timeouts and its error classes. A kept connection the server closed while it was idle
is noticed before use, and when the server closes one just as a request goes out
(nothing of an answer came back) the request is sent again once on a new connection,
as browsers and Go's client do.

What it leaves to httpx: proxies (`LeanAsyncClient` is asked for a transport only for
direct connections; a URL a proxy from the environment serves goes through httpx's
proxy transport), HTTP/2 (when asked for, httpx's own transport is used), Unix sockets.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cache
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")


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
DEFAULT_PORTS = {"http": 80, "https": 443}
HEX_DIGITS = b"0123456789abcdefABCDEF"

#: scheme, host, port
Origin = tuple[str, str, int]


class _Stale(Exception):  # noqa: N818 - a signal inside this module, never seen outside
    """A kept connection was closed by the server before any answer came back."""


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


async def _within(awaitable: Awaitable[T], seconds: float | None, error: type[Exception]) -> T:
    """`awaitable`'s result, or `error` when it takes longer than `seconds` (None: no limit)."""
    if seconds is None:
        return await awaitable
    try:
        async with asyncio.timeout(seconds):
            return await awaitable
    except TimeoutError:
        raise error(f"no answer within {seconds:g} s") from None


class Http1Transport(http.AsyncBaseTransport):  # type: ignore[misc,name-defined]
    """httpx's transport interface over asyncio streams (see the module's docstring)."""

    def __init__(
        self,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        limits: Any = None,
    ) -> None:
        limits = limits or http.Limits()
        self._tls_settings = (verify, cert, trust_env)
        self._tls: ssl.SSLContext | None = None
        #: Kept connections per origin, the newest last.
        self._idle: dict[Origin, list[Connection]] = {}
        self._keep = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry

    async def handle_async_request(self, request: Any) -> Any:
        url = request.url
        if url.scheme not in DEFAULT_PORTS:
            raise http.UnsupportedProtocol(f"the lean transport cannot send to {url.scheme}://")
        origin = (url.scheme, url.host, url.port or DEFAULT_PORTS[url.scheme])
        timeouts = request.extensions.get("timeout") or {}
        message = _message(request, await _body(request))
        kept = self._take(origin)
        try:
            return await self._exchange(request, origin, kept, message, timeouts)
        except _Stale:
            # The server closed the kept connection as the request went out: it never
            # read it, so it is sent again once, on a new connection.
            return await self._exchange(request, origin, None, message, timeouts)

    async def _exchange(
        self,
        request: Any,
        origin: Origin,
        kept: Connection | None,
        message: bytes,
        timeouts: dict[str, float | None],
    ) -> Any:
        connection = kept or await self._connect(origin, timeouts.get("connect"))
        read_timeout = timeouts.get("read")
        try:
            try:
                connection.writer.write(message)
                await _within(connection.writer.drain(), timeouts.get("write"), http.WriteTimeout)
            except OSError as exc:
                if kept is not None:
                    raise _Stale from exc
                raise http.WriteError(str(exc) or type(exc).__name__) from exc
            while True:
                version, status, reason, headers = await _read_head(
                    connection.reader, read_timeout, stale_if_empty=kept is not None
                )
                if not 100 <= status < 200:
                    break
                if status == 101:
                    raise http.RemoteProtocolError("the server switched protocols")
                # An interim answer (100 Continue, 103 Early Hints): the real one follows.
        except BaseException:
            connection.close()
            raise
        body = Body(self, origin, connection, request.method, version, status, headers)
        body.read_timeout = read_timeout
        return http.Response(
            status,
            headers=headers,
            stream=body,
            extensions={"http_version": version, "reason_phrase": reason},
        )

    async def _connect(self, origin: Origin, seconds: float | None) -> Connection:
        scheme, host, port = origin
        tls = self._tls_context() if scheme == "https" else None
        try:
            reader, writer = await _within(
                asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls else None, limit=HEAD_LIMIT
                ),
                seconds,
                http.ConnectTimeout,
            )
        except OSError as exc:  # refused, no such host, a certificate refused (SSLError)
            raise http.ConnectError(str(exc) or type(exc).__name__) from exc
        return Connection(reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        """httpx's own SSL context for these settings, made on the first https call (it
        reads the CA bundle: milliseconds)."""
        if self._tls is None:
            verify, cert, trust_env = self._tls_settings
            self._tls = http.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
            self._tls.set_alpn_protocols(["http/1.1"])
        return self._tls

    def _take(self, origin: Origin) -> Connection | None:
        """The newest kept connection to `origin` still open and not expired; None if none."""
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = asyncio.get_running_loop().time()
        while idle:
            connection = idle.pop()
            if connection.open() and not self._expired(connection, now):
                return connection
            connection.close()
        return None

    def keep(self, origin: Origin, connection: Connection) -> None:
        """Take back a connection whose answer was read to its end."""
        now = asyncio.get_running_loop().time()
        idle = self._idle.setdefault(origin, [])
        while idle and self._expired(idle[0], now):  # the oldest are at the front
            idle.pop(0).close()
        if self._keep is not None and len(idle) >= self._keep:
            connection.close()
            return
        connection.idle_since = now
        idle.append(connection)

    def _expired(self, connection: Connection, now: float) -> bool:
        return self._expiry is not None and now - connection.idle_since >= self._expiry

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


async def _body(request: Any) -> bytes:
    """The request's body, whole (the SDK's bodies are JSON, already in memory)."""
    try:
        return bytes(request.content)
    except http.RequestNotRead:
        return b"".join([bytes(part) async for part in request.stream])


def _message(request: Any, body: bytes) -> bytes:
    """The request's bytes on the wire: request line, headers, body. A body sent in
    chunks by httpx is sent whole here, with its length."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    has_length = False
    for name, value in request.headers.raw:
        lower = name.lower()
        if lower == b"transfer-encoding":
            continue
        if b"\r" in name or b"\n" in name or b"\r" in value or b"\n" in value or b":" in name:
            raise http.LocalProtocolError(f"a header cannot hold a line break: {name!r}")
        has_length = has_length or lower == b"content-length"
        lines.append(b"%s: %s" % (name, value))
    if not has_length and (body or request.method in ("POST", "PUT", "PATCH")):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def _read_head(
    reader: asyncio.StreamReader, seconds: float | None, *, stale_if_empty: bool
) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    """The status line and headers of an answer: (version, status, reason, headers)."""
    try:
        raw = await _within(reader.readuntil(b"\r\n\r\n"), seconds, http.ReadTimeout)
    except asyncio.IncompleteReadError as exc:
        if stale_if_empty and not exc.partial:
            raise _Stale from exc
        raise http.RemoteProtocolError(
            "the server closed the connection without an answer"
        ) from exc
    except asyncio.LimitOverrunError as exc:
        raise http.RemoteProtocolError("the answer's headers are too long") from exc
    except OSError as exc:
        if stale_if_empty:  # reset before a byte came back: the server dropped it
            raise _Stale from exc
        raise http.ReadError(str(exc) or type(exc).__name__) from exc
    status_line, *lines = raw[:-4].split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise http.RemoteProtocolError(f"not an HTTP/1.1 answer: {status_line[:80]!r}")
    headers = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise http.RemoteProtocolError(f"a malformed header line: {line[:80]!r}")
        headers.append((name, value.strip(b" \t")))
    return version, int(code), reason, headers


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

    read_timeout: float | None = None
    _watch: _Watch | None = None

    def __init__(
        self,
        pool: Http1Transport,
        origin: Origin,
        connection: Connection,
        method: str,
        version: bytes,
        status: int,
        headers: list[tuple[bytes, bytes]],
    ) -> None:
        self._pool = pool
        self._origin = origin
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
            self._pool.keep(self._origin, connection)
        else:  # read only in part: what is left of it would be read as the next answer
            connection.close()


@cache
def lean_client_class() -> type:
    """httpx's AsyncClient with this transport for direct connections (see the module)."""

    class LeanAsyncClient(http.AsyncClient):  # type: ignore[misc,name-defined]
        def _init_transport(self, **settings: Any) -> Any:
            if settings.get("transport") is not None or settings.get("http2"):
                return super()._init_transport(**settings)
            return Http1Transport(
                verify=settings.get("verify", True),
                cert=settings.get("cert"),
                trust_env=settings.get("trust_env", True),
                limits=settings.get("limits"),
            )

    return LeanAsyncClient
