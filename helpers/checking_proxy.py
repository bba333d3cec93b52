"""The checking proxy: every connection an agent's browser or command opens goes through it.

Two kinds of client use it, each with a proxy of its own:

- a chat's browser (browsing/session.py): Playwright's routing would see each
  request a page makes, but not the next request of a redirect (the network
  stack follows it without asking), and Chromium would resolve a host again
  after a check (DNS rebinding). So each chat's browser context is given a
  proxy on loopback (`start`), and Chromium sends every request through it,
  loopback ones too (Playwright adds `<-loopback>` to the bypass list);
- a sandboxed code session (execution/): its commands have a network of their
  own with no route out, and the proxy listens on that network's loopback
  through a socket made there and handed to Cadre (`serve`), so the commands
  reach nothing but the proxy (`HTTP_PROXY`, `HTTPS_PROXY`).

It reads `CONNECT host:port` (https, wss, any TCP a client tunnels) and
absolute-form requests (plain http), resolves the host, checks every address
with the outbound policy (helpers/outbound.py: private addresses as the
setting says, Cadre's own ports never) and connects to a checked address
itself, so what the client reaches is what was checked, however it got there.
A refused one is answered 403 and its reason told to `refused`.

Each connection a client opens is a descriptor in Cadre's process, and a
command can open thousands (5,000 held open in a probe; a desktop's usual
limit is 1,024, past which Cadre can open no file and take no request). So a
proxy holds at most `MOST_CONNECTIONS` at once, and the sandboxes' proxies at
most a `Budget` they share: past it, the proxy stops accepting until one
closes, and the rest wait in the client's kernel (a sandbox's own), costing
Cadre nothing.

A host is resolved in a thread, as resolving blocks; and where a DNS server is
slow (or, offline, never answers) each lookup holds its thread for seconds. So
the proxies resolve in a few threads of their own (`LOOKUP_THREADS`), one proxy
at most `LOOKUPS_AT_ONCE` at a time: 40 requests of a command for slow names
had taken every thread of the loop's executor, and the agents' own blocking
work waited 6 s behind them.

Plain http: one request per connection to the proxy. The request goes on with
`Connection: close` and its answer comes back saying `Connection: close`, so
the client never sends a second request, perhaps for another host, down a
connection already joined to the first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import weakref
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from helpers import own_ports
from helpers.http_head import Headers, parse_answer_head, split_head
from helpers.outbound import OutboundPolicy, OutboundRefused

log = logging.getLogger(__name__)

#: Longest request or answer head read (a longer one is refused: no client sends one).
HEAD_LIMIT = 64 * 1024
#: Bytes moved at a time between the two sides.
BLOCK = 64 * 1024
#: Seconds to connect to the checked address before the page gets 502.
CONNECT_TIMEOUT = 15.0
#: Connections one proxy holds open at once (Chromium opens at most 32 to a proxy).
MOST_CONNECTIONS = 128
#: Threads every proxy's lookups share, apart from the loop's executor; one proxy's at once.
LOOKUP_THREADS = 16
LOOKUPS_AT_ONCE = 4
_lookups = concurrent.futures.ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="cadre-lookup")
#: Refusals of one proxy logged one by one; the rest are counted, and logged when it closes.
LOGGED_REFUSALS = 20
#: Seconds the proxy waits before accepting again when the process is out of descriptors.
ACCEPT_PAUSE = 0.5
#: Headers that describe one hop, not the request: not passed on (RFC 9110 7.6.1).
HOP_HEADERS = frozenset({b"connection", b"keep-alive", b"proxy-connection",
                         b"proxy-authorization", b"proxy-authenticate", b"te", b"trailer",
                         b"upgrade"})  # fmt: skip


class ProxyRequest:
    """The head of a request a client sent to the proxy, and where it is going."""

    def __init__(self, method: str, target: str, version: str, headers: Headers):
        self.method, self.target, self.version, self.headers = method, target, version, headers
        self.host, self.port, self.path = "", 0, ""
        if method == "CONNECT":  # host:port, an IPv6 host in brackets
            host, _, port = target.rpartition(":")
            self.host, self.port = host.strip("[]"), int(port)
        else:
            parts = urlsplit(target)
            if parts.scheme.lower() != "http" or not parts.hostname:
                raise ValueError(f"not an absolute http URL: {target[:200]!r}")
            self.host, self.port = parts.hostname, parts.port or 80
            self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if not self.host or not 0 < self.port < 65536:
            raise ValueError(f"no host and port in {target[:200]!r}")
        # The check reads the host back from `url`: one it cannot read (`a]b`, a ValueError
        # there, where nothing answers it) or reads otherwise (`a/b@c` is `a`) is refused here.
        if urlsplit(self.url).hostname != self.host.lower():
            raise ValueError(f"not a host: {self.host[:200]!r}")

    @classmethod
    def parse(cls, head: bytes) -> ProxyRequest:
        """Read a head (ending in a blank line); ValueError if it is not an HTTP request."""
        first, headers = split_head(head)
        method, target, version = first.decode("latin-1").split(" ")
        if not version.startswith("HTTP/1."):
            raise ValueError(f"not HTTP/1: {version[:20]!r}")
        return cls(method.upper(), target, version, headers)

    @property
    def url(self) -> str:
        """The URL the policy checks (and a refusal names)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self.method == "CONNECT" else "http"
        return f"{scheme}://{host}:{self.port}{self.path or '/'}"

    def origin_head(self) -> bytes:
        """The head sent on to the server: the path alone, one request, no proxy headers."""
        kept = [(k, v) for k, v in self.headers if k.lower() not in HOP_HEADERS]
        if not any(k.lower() == b"host" for k, _ in kept):
            kept.insert(0, (b"Host", urlsplit(self.target).netloc.encode("latin-1")))
        first = f"{self.method} {self.path} {self.version}".encode("latin-1")
        return _head(first, [*kept, (b"Connection", b"close")])


class Budget:
    """How many connections may be open at once: one proxy's, or several proxies' together
    (in Cadre all on the agents' loop)."""

    def __init__(self, most: int) -> None:
        self.most = most
        #: Connections open now.
        self.open = 0
        self._waiting: list[asyncio.Future[None]] = []

    async def take(self) -> None:
        """One connection more, once there is room for it."""
        while self.open >= self.most:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            finally:
                self._waiting.remove(waiter)
        self.open += 1

    def give(self) -> None:
        """One connection closed: whoever waits looks again (few wait: one per proxy)."""
        self.open -= 1
        for waiter in self._waiting:  # on its own loop (a test's may be another)
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class CheckingProxy:
    """An HTTP proxy that lets a connection through only to a checked address."""

    def __init__(
        self,
        policy: Callable[[], OutboundPolicy],
        refused: Callable[[str], None],
        who: str = "the browser",
        shared: Budget | None = None,
    ) -> None:
        self._policy = policy
        #: Told each refusal (the browser's guard keeps them for the agent's next step).
        self._refused = refused
        #: Whose connections these are, for the log and the answers ("commands").
        self.who = who
        #: This proxy's connections, and those it shares with other proxies (if any).
        self._budgets = [Budget(MOST_CONNECTIONS), *([shared] if shared else [])]
        self._listening: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        #: Lets go of the port `start` listens on (this machine's loopback) as Cadre's: at
        #: `close`, or when the proxy is dropped unclosed (a chat's browser never closed),
        #: which would leave the port refused to every agent for the process's life.
        self._let_go: weakref.finalize | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._looking_up: asyncio.Semaphore | None = None  # made on the proxy's loop
        self._refusals = 0

    @property
    def address(self) -> str:
        """The proxy's URL (`start` or `serve` first)."""
        assert self._listening is not None, "the proxy is not started"
        host, port = self._listening.getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> str:
        """Listen on a free port of this machine's loopback; the proxy's URL."""
        if self._listening is None:
            listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listening.bind(("127.0.0.1", 0))
            listening.listen(128)
            port = listening.getsockname()[1]
            own_ports.add(port)  # not a way for an agent to go round (own_ports.py)
            self._let_go = weakref.finalize(self, own_ports.remove, port)
            await self.serve(listening)
        return self.address

    async def serve(self, listening: socket.socket) -> None:
        """Accept the connections of a socket already listening (one made in a sandbox's own
        network, where nothing else of this machine is reachable); closed with the proxy."""
        assert self._listening is None, "the proxy is started already"
        listening.setblocking(False)
        self._listening = listening
        self._acceptor = asyncio.get_running_loop().create_task(self._accept_all(listening))

    async def close(self) -> None:
        """Stop listening and cut every connection still open."""
        acceptor, self._acceptor = self._acceptor, None
        try:
            if acceptor is not None:
                acceptor.cancel()
                await asyncio.gather(acceptor, return_exceptions=True)
        finally:  # a close itself stopped still lets the port go, and says so to the others
            listening, self._listening = self._listening, None
            if listening is not None:
                listening.close()
            if self._let_go is not None:
                self._let_go()  # once: a finalizer runs at most once
                self._let_go = None
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._refusals > LOGGED_REFUSALS:
            unlogged, self._refusals = self._refusals - LOGGED_REFUSALS, 0
            log.info("connections of %s: and %d more refused", self.who, unlogged)

    async def _accept_all(self, listening: socket.socket) -> None:
        """Accept connections while there is room for them in every budget."""
        loop = asyncio.get_running_loop()
        while True:
            taken: list[Budget] = []
            try:
                for budget in self._budgets:
                    await budget.take()
                    taken.append(budget)
                client, _ = await loop.sock_accept(listening)
            except OSError as exc:  # out of descriptors (EMFILE): the clients wait meanwhile
                for budget in taken:
                    budget.give()
                log.warning("the checking proxy for %s cannot accept: %s", self.who, exc)
                await asyncio.sleep(ACCEPT_PAUSE)
                continue
            except BaseException:
                for budget in taken:
                    budget.give()
                raise
            task = loop.create_task(self._accept(client))
            self._connections.add(task)  # kept, so that close() can cut it
            task.add_done_callback(self._connections.discard)

    async def _accept(self, client: socket.socket) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            reader, writer = await asyncio.open_connection(sock=client, limit=HEAD_LIMIT)
            await self._serve(reader, writer)
        except (asyncio.CancelledError, OSError):
            pass  # cut by close(), or the client went away
        finally:
            if writer is None:
                client.close()
            for budget in self._budgets:
                budget.give()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            request = await _read_request(reader)
            if request is None:
                unread = f"Cadre's proxy for {self.who} could not read that request"
                await _answer(writer, 400, unread)
                return
            try:
                addresses = await self._check(request.url)
            except OutboundRefused as exc:
                self._refused(str(exc))
                self._refusals += 1
                if self._refusals <= LOGGED_REFUSALS:  # a loop of them: counted, not logged
                    log.info("a connection of %s refused: %s", self.who, exc)
                await _answer(writer, 403, str(exc))
                return
            joined = await _connect(addresses, request.port)
            if joined is None:
                await _answer(writer, 502, f"{request.url}: could not connect")
                return
            up_reader, upstream = joined
            if request.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await _join(reader, upstream, _pump(up_reader, writer))
            else:
                upstream.write(request.origin_head())
                await _join(reader, upstream, _answer_once(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):  # a timeout is an OSError too
            pass  # either side went away: nothing to tell anyone
        finally:
            for side in (upstream, writer):
                if side is not None:
                    side.close()

    async def _check(self, url: str) -> list[str]:
        """The policy's check of `url` (a lookup) in the proxies' own threads."""
        if self._looking_up is None:
            self._looking_up = asyncio.Semaphore(LOOKUPS_AT_ONCE)
        async with self._looking_up:
            check = self._policy().check_url
            return await asyncio.get_running_loop().run_in_executor(_lookups, check, url)


def _head(first: bytes, headers: Headers) -> bytes:
    return b"\r\n".join([first, *(name + b": " + value for name, value in headers)]) + b"\r\n\r\n"


async def _read_request(reader: asyncio.StreamReader) -> ProxyRequest | None:
    try:
        return ProxyRequest.parse(await reader.readuntil(b"\r\n\r\n"))
    except (ValueError, asyncio.LimitOverrunError):
        return None


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    """A short plain-text answer from the proxy itself; the connection then closes."""
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = f"{text}\n".encode()
    writer.write(_head(f"HTTP/1.1 {status} {reason}".encode(), [
        (b"Content-Type", b"text/plain; charset=utf-8"), (b"Content-Length", b"%d" % len(body)),
        (b"Connection", b"close"),
    ]) + body)  # fmt: skip
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _connect(
    addresses: list[str], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A connection to the first of the checked addresses that answers."""
    for address in addresses:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(address, port, limit=HEAD_LIMIT), CONNECT_TIMEOUT
            )
        except OSError as exc:  # TimeoutError among them
            log.debug("checking proxy: %s port %s: %s", address, port, exc)
    return None


async def _pump(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    while data := await source.read(BLOCK):
        target.write(data)
        await target.drain()


async def _answer_once(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    """The server's answer to the one request, its head saying the connection closes after."""
    while True:
        # Read strictly (helpers/http_head.py), as a head Chromium reads otherwise could hide
        # a `Connection: keep-alive` from the filter below, and Chromium would send its next
        # request down this connection, unchecked: it takes a bare LF as a line end, and
        # `HTTP/1.1  100` (two spaces) as an interim answer, whose real head would then follow
        # unread. The ValueError ends this side, and _join both: Chromium sees an empty answer.
        head = parse_answer_head(await source.readuntil(b"\r\n\r\n"))
        interim = 100 <= head.status < 200 and head.status != 101
        headers = head.headers
        if not interim:  # 103 Early Hints, 100 Continue: passed on, the real answer follows
            headers = [(k, v) for k, v in headers if k.lower() not in HOP_HEADERS]
            headers += [(b"Connection", b"close"), (b"Proxy-Connection", b"close")]
        first = b"%s %d %s" % (head.version, head.status, head.reason)
        target.write(_head(first.rstrip(b" "), headers))
        if not interim:
            break
    await _pump(source, target)


async def _join(
    reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, back: Coroutine[Any, Any, None]
) -> None:
    """Move the client's bytes up while `back` moves the server's down; the first side to end
    ends both (a tunnel or a single request has nothing more to say once one side closed)."""
    up = asyncio.ensure_future(_pump(reader, upstream))
    down = asyncio.ensure_future(back)
    try:
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (up, down):
            task.cancel()
        await asyncio.gather(up, down, return_exceptions=True)
