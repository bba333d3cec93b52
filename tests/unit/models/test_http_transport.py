"""The lean HTTP/1.1 transport (models.http_transport) against a real server on a socket:
each test scripts the bytes the server answers with and checks what reached the server,
what came back, and which connection carried it."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from models.http_body import _Chunked
from models.http_transport import Http1Transport, http, lean_client_class

#: What the server does instead of answering: close the connection at once.
HANG_UP = b""


class RawServer:
    """An HTTP server that answers the n-th request with the n-th scripted bytes (a
    callable gets the writer and does as it likes), recording each request and counting
    connections."""

    def __init__(self, *answers: bytes | Callable[[asyncio.StreamWriter], Any]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self.port = 0
        self.tls: ssl.SSLContext | None = None

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.requests.append((head, await reader.readexactly(length)))
                answer = self.answers.pop(0)
                if answer == HANG_UP:
                    break
                if callable(answer):
                    await answer(writer)
                    if writer.is_closing():
                        return
                else:
                    writer.write(answer)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def ok(body: bytes = b"hello", *headers: bytes) -> bytes:
    lines = [b"HTTP/1.1 200 OK", b"Content-Length: %d" % len(body), *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts)
    return (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + body
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


def then_close(answer: bytes) -> Callable[[asyncio.StreamWriter], Any]:
    """An answer whose body ends with the connection."""

    async def send(writer: asyncio.StreamWriter) -> None:
        writer.write(answer)
        await writer.drain()
        writer.close()

    return send


@pytest.fixture
async def client() -> AsyncIterator[Any]:
    async with lean_client_class()(timeout=5) as lean:
        yield lean


class ClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test moves on: a timeout or an expiry comes when the
    test has let that much time pass, never by waiting for it, and never early because a
    busy machine was slow between two steps."""

    def __init__(self) -> None:
        super().__init__()
        self.ahead = 0.0

    def time(self) -> float:
        return super().time() + self.ahead

    def advance(self, seconds: float) -> None:
        self.ahead += seconds

    async def let_pass_until(self, done: asyncio.Future[Any], most: float = 60) -> float:
        """Let time pass, a tenth of a second a turn of the loop, until `done` is (or `most`
        seconds have passed); the seconds that passed."""
        began = self.time()
        for _ in range(int(most * 10)):
            if done.done():
                break
            self.advance(0.1)
            await asyncio.sleep(0)  # a turn: what is ready runs, timers now due fire
        return self.time() - began


def on_clock(test: Callable[[ClockLoop], Awaitable[None]]) -> None:
    with asyncio.Runner(loop_factory=ClockLoop) as runner:
        runner.run(test(runner.get_loop()))  # type: ignore[arg-type]


async def test_a_kept_connection_carries_the_next_request(client):
    async with RawServer(ok(b"one"), ok(b"two")) as server:
        first = await client.post(f"{server.url}/v1/chat?x=1", json={"a": 1})
        second = await client.post(f"{server.url}/v1/chat", content=b"raw")
    assert (first.text, second.text) == ("one", "two")
    assert server.connections == 1
    head, body = server.requests[0]
    assert head.startswith(b"POST /v1/chat?x=1 HTTP/1.1\r\n")
    assert b"\r\nHost: 127.0.0.1:%d\r\n" % server.port in head
    assert b"Content-Length: 7\r\n" in head and body == b'{"a":1}'
    assert server.requests[1][1] == b"raw"


@pytest.mark.parametrize(
    "answer, kept",
    [
        (chunked(b"he", b"llo", trailer=b"X-Trailer: 1\r\n"), True),
        (then_close(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello"), False),
        (ok(b"hello", b"Connection: close"), False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", False),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello", True),
    ],
    ids=["chunked", "to-the-end", "close", "http-1.0", "http-1.0-keep-alive"],
)
async def test_each_way_a_body_ends(client, answer, kept):
    async with RawServer(answer, ok(b"next")) as server:
        got = await client.get(server.url)
        assert got.text == "hello"
        assert (await client.get(server.url)).text == "next"
    assert server.connections == (1 if kept else 2)


async def test_an_answer_without_a_body_keeps_its_connection(client):
    no_content = b"HTTP/1.1 204 No Content\r\n\r\n"
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after")
    head_answer = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"  # its length, no body
    async with RawServer(no_content, head_answer, interim) as server:
        assert (await client.get(server.url)).status_code == 204
        head = await client.head(server.url)
        assert (head.status_code, head.content) == (200, b"")
        assert (await client.get(server.url)).text == "after"
    assert server.connections == 1


async def test_a_connection_the_server_closed_while_idle_is_not_used(client):
    async with RawServer(then_close(ok(b"first")), ok(b"second")) as server:
        assert (await client.get(server.url)).text == "first"
        await asyncio.sleep(0.05)  # the server's FIN arrives
        assert (await client.get(server.url)).text == "second"
    assert server.connections == 2
    assert len(server.requests) == 2  # nothing sent into the closed connection


async def test_a_request_dropped_on_a_kept_connection_is_sent_again_once(client):
    async with RawServer(ok(b"first"), HANG_UP, ok(b"again")) as server:
        assert (await client.post(server.url, content=b"1")).text == "first"
        assert (await client.post(server.url, content=b"2")).text == "again"
    assert [body for _, body in server.requests] == [b"1", b"2", b"2"]
    assert server.connections == 2


async def test_a_new_connection_closed_without_an_answer_is_an_error(client):
    async with RawServer(HANG_UP, ok()) as server:
        with pytest.raises(http.RemoteProtocolError, match="without an answer"):
            await client.post(server.url, content=b"1")
    assert len(server.requests) == 1  # not sent again: a new connection is no stale one


async def test_a_body_cut_short_is_a_transport_error_and_its_connection_dropped(client):
    cut = then_close(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
    async with RawServer(cut) as server:
        async with client.stream("GET", server.url) as answer:
            with pytest.raises(http.TransportError, match="before the body was complete"):
                await answer.aread()


async def test_a_body_left_unread_closes_its_connection(client):
    async with RawServer(chunked(b"a" * 10, b"b" * 10), ok(b"next")) as server:
        async with client.stream("GET", server.url) as answer:
            async for _ in answer.aiter_raw():
                break  # the rest stays unread
        assert (await client.get(server.url)).text == "next"
    assert server.connections == 2


@pytest.mark.parametrize(
    "answer, words",
    [
        (b"HTTP/2 200 OK\r\n\r\n", "not an HTTP/1.1 answer"),
        (b"HTTP/1.1 2x0 OK\r\n\r\n", "not an HTTP/1.1 answer"),
        (b"HTTP/1.1 200 OK\r\n folded\r\n\r\n", "malformed header"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n", "longer than"),
    ],
    ids=["version", "status", "folded-header", "two-lengths", "chunk-size", "chunk-length"],
)
async def test_a_malformed_answer_is_a_protocol_error(client, answer, words):
    async with RawServer(answer) as server:
        with pytest.raises(http.RemoteProtocolError, match=words):
            await client.get(server.url)


def test_timeouts_for_the_head_and_between_the_bodys_bytes():
    """A server that says nothing, before its head or in its body: the read timeout (10 s
    on the loop's clock) ends the wait, and not the connect or write timeouts (60 s)."""
    asked = asyncio.Event()

    async def stall_before_head(writer):
        asked.set()
        await asyncio.Event().wait()  # never answers (the loop's end cancels this)

    async def stall_in_body(writer):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
        await asyncio.Event().wait()  # the other half never comes

    async def run(clock: ClockLoop) -> None:
        timeout = http.Timeout(60, read=10)
        async with lean_client_class()(timeout=timeout) as client:
            async with RawServer(stall_before_head, stall_in_body) as server:
                request = asyncio.ensure_future(client.get(server.url))
                await asyncio.wait_for(asked.wait(), 30)  # sent: the answer's head is awaited
                waited = await clock.let_pass_until(request)
                with pytest.raises(http.ReadTimeout):
                    request.result()
                assert 10 <= waited < 11
                async with client.stream("GET", server.url) as answer:
                    body = answer.aiter_raw()
                    assert await anext(body) == b"hello"  # the body began: the rest is awaited
                    rest = asyncio.ensure_future(anext(body))
                    waited = await clock.let_pass_until(rest)
                    with pytest.raises(http.ReadTimeout):
                        rest.result()
                    assert 10 <= waited < 11

    on_clock(run)


def test_a_slow_stream_within_the_read_timeout_is_read_whole():
    """Each part comes 6 s after the last (on the loop's clock), 24 s in all: under the 10 s
    read timeout each time, over it altogether."""
    asked = asyncio.Event()

    async def trickle(writer):
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (b"a", b"b", b"c", b"d"):
            await asked.wait()  # the client waits for this part now
            asked.clear()
            asyncio.get_running_loop().advance(6)
            writer.write(b"1\r\n%s\r\n" % part + (b"0\r\n\r\n" if part == b"d" else b""))

    async def run(clock: ClockLoop) -> None:
        async with lean_client_class()(timeout=http.Timeout(60, read=10)) as client:
            async with RawServer(trickle) as server, client.stream("GET", server.url) as answer:
                began, parts = clock.time(), []
                asked.set()
                async for part in answer.aiter_raw():
                    parts.append(part)
                    asked.set()
        assert b"".join(parts) == b"abcd" and clock.time() - began >= 24

    on_clock(run)


async def test_no_server_is_a_connect_error(client, unused_tcp_port):
    with pytest.raises(http.ConnectError):
        await client.get(f"http://127.0.0.1:{unused_tcp_port}/")


async def test_a_gzipped_body_is_decoded(client):
    packed = gzip.compress(b"unpacked text")
    async with RawServer(ok(packed, b"Content-Encoding: gzip")) as server:
        answer = await client.get(server.url)
    assert answer.text == "unpacked text"
    assert b"accept-encoding: gzip" in server.requests[0][0].lower()


async def test_a_line_break_in_a_header_never_reaches_the_server(client):
    async with RawServer(ok()) as server:
        with pytest.raises((http.LocalProtocolError, ValueError)):
            await client.get(server.url, headers={"X-Name": "a\r\nInjected: 1"})
    assert server.requests == []


async def test_tls_with_the_certificate_trusted_and_refused(tmp_path):
    cert, key = self_signed(tmp_path)
    server = RawServer(ok(b"secret"))
    server.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.tls.load_cert_chain(cert, key)
    async with server:
        trusted = ssl.create_default_context(cafile=str(cert))
        async with lean_client_class()(verify=trusted, timeout=5) as trusting:
            assert (await trusting.get(f"https://localhost:{server.port}/")).text == "secret"
        async with lean_client_class()(timeout=5) as default:
            with pytest.raises(http.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await default.get(f"https://localhost:{server.port}/")


async def test_a_proxy_from_the_environment_is_used_and_no_proxy_is_honoured(monkeypatch):
    async with RawServer(ok(b"from the proxy")) as proxy, RawServer(ok(b"direct")) as direct:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "localhost")
        async with lean_client_class()(timeout=5) as client:
            assert (await client.get("http://models.example/v1/x")).text == "from the proxy"
            assert (await client.get(f"http://localhost:{direct.port}/")).text == "direct"
            assert isinstance(client._transport, Http1Transport)  # the direct one is ours
    # A proxy is asked in the absolute form: httpx's proxy transport sent it.
    assert proxy.requests[0][0].startswith(b"GET http://models.example/v1/x HTTP/1.1")
    assert direct.requests[0][0].startswith(b"GET / HTTP/1.1")


async def test_kept_connections_are_bounded():
    limits = http.Limits(max_keepalive_connections=1)
    async with lean_client_class()(timeout=5, limits=limits) as client:
        async with RawServer(*[ok(b"%d" % n) for n in range(4)]) as server:
            await asyncio.gather(client.get(server.url), client.get(server.url))
            assert server.connections == 2
            # Only one of the two was kept: two at once again take it and one new one.
            await asyncio.gather(client.get(server.url), client.get(server.url))
            assert server.connections == 3


def test_a_kept_connection_expires():
    async def run(clock: ClockLoop) -> None:
        limits = http.Limits(keepalive_expiry=30)
        async with lean_client_class()(timeout=5, limits=limits) as client:
            async with RawServer(*[ok(b"%d" % n) for n in range(3)]) as server:
                await client.get(server.url)
                clock.advance(29)
                await client.get(server.url)  # idle for 29 s of its 30: used again
                assert server.connections == 1
                clock.advance(30)
                await client.get(server.url)  # idle for 30 s: closed, a new one
                assert server.connections == 2

    on_clock(run)


async def test_bytes_after_a_chunked_bodys_end_keep_its_connection_out_of_the_pool(client):
    """What follows the last chunk was never asked for (here a second answer smuggled behind
    the first): the connection is out of step with its server, and what is left of those
    bytes would be read as the next request's answer. It is closed, never used again."""
    smuggled = chunked(b"hello") + ok(b"smuggled")
    async with RawServer(smuggled, ok(b"next")) as server:
        assert (await client.get(server.url)).text == "hello"
        assert (await client.get(server.url)).text == "next"
    assert server.connections == 2


async def test_the_lean_model_client_sends_through_this_transport():
    from models.llm import ModelConfig
    from models.openai_model import OpenAIModel

    model = OpenAIModel(ModelConfig("openai/m", "http://127.0.0.1:9/v1", "k", client="openai"))
    wire, _ = await model._client()
    assert isinstance(wire.http._transport, Http1Transport)
    assert wire.sdk._client is wire.http  # the SDK's own calls (embeddings) take it too


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for `localhost` and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


BODY = b"5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n"


@pytest.mark.parametrize("cut", range(1, len(BODY)))
def test_a_chunked_body_cut_anywhere_decodes_the_same(cut):
    decoder = _Chunked()
    first = decoder.feed(BODY[:cut])
    assert not decoder.ended
    assert first + decoder.feed(BODY[cut:]) == b"hello 0123456789"
    assert decoder.ended and not decoder.spare


def test_a_chunked_body_byte_by_byte_and_what_follows_its_end():
    decoder = _Chunked()
    payload = b"".join(decoder.feed(BODY[n : n + 1]) for n in range(len(BODY)))
    assert payload == b"hello 0123456789" and decoder.ended
    after = _Chunked()
    assert after.feed(BODY + b"HTTP/1.1 200 OK\r\n") == b"hello 0123456789"
    assert after.ended and after.spare


def test_a_long_chunk_streams_through_as_it_comes():
    decoder = _Chunked()
    assert decoder.feed(b"100000\r\n" + b"a" * 1000) == b"a" * 1000  # 1 MiB announced
    assert decoder.feed(b"b" * 5000) == b"b" * 5000
