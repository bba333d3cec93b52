"""A lean HTTP/1.1 transport under the `openai` SDK: asyncio's streams move the bytes.

Why: with 50 chats streaming at once, the SDK's own HTTP stack (httpx over httpcore,
h11 and anyio) took 8-20 ms of CPU per call on a 2-core machine, most of it in a
connection pool that checks every kept connection on each request; asyncio's streams do
the same work for about 1.5 ms (`python -m bench models`). The SDK and httpx above keep
everything else: the request they build, redirects, gzip, the SDK's typed errors and
the error classes our readers know (`models.sse`, `models.provider_faults`).

What this transport does: one request at a time on a kept-alive connection (a pool per
scheme, host and port, newest first, bounded like httpx's), the answer's body read as
`models.http_body` frames it (Content-Length, chunks, or the connection's end); TLS
through the SSL context httpx would make (`verify`, `cert`, SSL_CERT_FILE); httpx's
connect, read and write timeouts and its error classes. A kept connection the server
closed while it was idle is noticed before use, and when the server closes one just as
a request goes out (nothing of an answer came back) the request is sent again once on
a new connection, as browsers and Go's client do.

What it leaves to httpx: proxies (`LeanAsyncClient` is asked for a transport only for
direct connections; a URL a proxy from the environment serves goes through httpx's
proxy transport), HTTP/2 (when asked for, httpx's own transport is used), Unix sockets.
What it leaves out: a bound on open connections (httpx's `max_connections`, 1,000 in
the SDK): a request that finds no kept connection opens one.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable
from functools import cache, partial
from typing import Any, TypeVar

from helpers.http_head import parse_answer_head
from models.http_body import HEAD_LIMIT, Body, Connection, http, http_module

__all__ = ["Http1Transport", "http", "http_module", "lean_client_class"]

T = TypeVar("T")


DEFAULT_PORTS = {"http": 80, "https": 443}

#: scheme, host, port
Origin = tuple[str, str, int]


class _Stale(Exception):  # noqa: N818 - a signal inside this module, never seen outside
    """A kept connection was closed by the server before any answer came back."""


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
        # The host as the wire has it: an international name in its IDNA form.
        origin = (url.scheme, url.raw_host.decode("ascii"), url.port or DEFAULT_PORTS[url.scheme])
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
        give_back = partial(self.keep, origin)
        body = Body(give_back, connection, request.method, version, status, headers, read_timeout)
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
    try:
        head = parse_answer_head(raw)
    except ValueError as exc:
        raise http.RemoteProtocolError(str(exc)) from None
    return head.version, head.status, head.reason, head.headers


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
