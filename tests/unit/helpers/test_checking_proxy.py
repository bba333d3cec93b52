"""The checking proxy, spoken to as Chromium and command-line clients do, against real servers."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from dataclasses import dataclass, field

import pytest

from browsing.file_copies import FileCopies
from browsing.guard import RequestGuard
from helpers.checking_proxy import LOGGED_REFUSALS, Budget, CheckingProxy
from helpers.outbound import OutboundPolicy, OutboundRefused


@dataclass(frozen=True)
class Policy(OutboundPolicy):
    """Refuses one loopback address (the other stands for the internet); a name in `names`
    resolves to the address given, as a DNS server would say at the time of the check."""

    refused: str = "127.0.0.2"
    names: dict[str, str] = field(default_factory=dict)

    def check_url(self, url: str) -> list[str]:
        from urllib.parse import urlsplit

        host = urlsplit(url).hostname or ""
        address = self.names.get(host, host)
        self.check_address(address, url)
        return [address]

    def check_address(self, address: str, url: str = "", port: int | None = None) -> None:
        if address == self.refused:
            raise OutboundRefused(f"{url} resolves to {address}: refused in this test")


class Upstream:
    """A server on `host`: records what it read, answers `answer`, or echoes (a tunnel)."""

    def __init__(self, host: str = "127.0.0.1", answer: bytes | None = None) -> None:
        self.host, self.answer = host, answer
        self.received = bytearray()
        self.connections = 0
        self.closed = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Upstream:
        self.server = await asyncio.start_server(self._serve, self.host, 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if self.answer is not None:
                self.received += await reader.readuntil(b"\r\n\r\n")
                writer.write(self.answer)
                await writer.drain()
                await reader.read()  # a server that keeps the connection open
            else:
                while data := await reader.read(1024):
                    self.received += data
                    writer.write(b"echo:" + data)
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self.closed.set()


@pytest.fixture
async def proxy():
    told: list[str] = []
    policy = Policy(names={"rebind.example": "127.0.0.1"})
    checking = CheckingProxy(lambda: policy, told.append)
    await checking.start()
    checking.told = told  # type: ignore[attr-defined]
    yield checking
    await checking.close()


async def talk(
    proxy: CheckingProxy, head: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = proxy.address.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head.encode())
    await writer.drain()
    return reader, writer


async def test_a_tunnel_to_an_allowed_address_carries_bytes_both_ways(proxy):
    async with Upstream() as server:
        reader, writer = await talk(
            proxy, f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
        writer.write(b"hello")
        assert await asyncio.wait_for(reader.readexactly(10), 5) == b"echo:hello"
        writer.close()
    assert proxy.told == []


async def test_a_refused_address_is_answered_403_and_never_connected(proxy):
    async with Upstream("127.0.0.2") as server:
        for head in (
            f"CONNECT 127.0.0.2:{server.port} HTTP/1.1\r\n\r\n",
            f"GET http://127.0.0.2:{server.port}/secret HTTP/1.1\r\nHost: 127.0.0.2\r\n\r\n",
        ):
            reader, writer = await talk(proxy, head)
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
            assert b"resolves to 127.0.0.2: refused in this test" in answer
        assert server.connections == 0
    assert len(proxy.told) == 2 and "127.0.0.2" in proxy.told[1]


async def test_plain_http_goes_on_as_one_request_and_its_answer_closes_the_connection(proxy):
    answer = (b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
              b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
              b"Keep-Alive: timeout=60\r\n\r\nhi")  # fmt: skip
    async with Upstream(answer=answer) as server:
        reader, writer = await talk(proxy, (
            f"POST http://127.0.0.1:{server.port}/form?q=1 HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{server.port}\r\nProxy-Connection: keep-alive\r\n"
            "Proxy-Authorization: Basic eA==\r\nContent-Length: 3\r\n\r\nabc"
        ))  # fmt: skip
        got = await asyncio.wait_for(reader.readuntil(b"\r\n\r\nhi"), 5)
        writer.close()  # as Chromium does, told the connection closes: then so does the
        await asyncio.wait_for(server.closed.wait(), 5)  # server's, which ignored it
    sent = bytes(server.received).decode()
    assert sent.startswith("POST /form?q=1 HTTP/1.1\r\n")
    assert "Connection: close\r\n" in sent and "Proxy-" not in sent
    interim, final = got.split(b"\r\n\r\n", 1)
    assert interim == b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>"
    assert final.startswith(b"HTTP/1.1 200 OK\r\n") and final.endswith(b"\r\n\r\nhi")
    assert b"Connection: close\r\n" in final and b"keep-alive" not in final.lower()


async def test_the_proxy_connects_to_the_address_it_checked_not_to_a_second_lookup(proxy):
    """DNS rebinding: the name is resolved once, by the check; Chromium never looks it up."""
    async with Upstream() as server:
        reader, writer = await talk(
            proxy, f"CONNECT rebind.example:{server.port} HTTP/1.1\r\n\r\n"
        )  # the conftest refuses every real lookup: only the checked address can be reached
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        writer.write(b"x")
        assert await asyncio.wait_for(reader.readexactly(6), 5) == b"echo:x"
        writer.close()
    assert server.connections == 1


@pytest.mark.parametrize("head", [
    "nonsense\r\n\r\n",
    "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET ftp://127.0.0.1/file HTTP/1.1\r\n\r\n",
    "CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n",
    "GET http://127.0.0.1/ HTTP/2\r\n\r\n",
    "GET http://127.0.0.1/ HTTP/1.1\r\nbad header\r\n\r\n",
    "GET http://127.0.0.1/ HTTP/1.1\r\nX: " + "y" * 70_000 + "\r\n\r\n",
])  # fmt: skip
async def test_a_request_it_cannot_read_is_answered_400(proxy, head):
    reader, writer = await talk(proxy, head)
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert proxy.told == []


async def test_an_address_that_does_not_answer_is_502(proxy):
    async with Upstream() as server:
        port = server.port
    reader, writer = await talk(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"could not connect" in answer


async def test_closing_the_proxy_cuts_its_open_tunnels(proxy):
    async with Upstream() as server:
        reader, writer = await talk(proxy, f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\n\r\n")
        await reader.readuntil(b"\r\n\r\n")
        await proxy.close()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # the tunnel is gone
        writer.close()


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 200 OK\r\nX-Note: a bare LF ends this line\nConnection: keep-alive\r\n",
    b"HTTP/1.1 200 OK\nConnection: keep-alive\r\n",
    b"HTTP/1.1  100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\n",
])  # fmt: skip
async def test_an_answer_head_read_otherwise_by_chromium_is_not_passed_on(proxy, head):
    """Chromium takes a bare LF as a line end and `HTTP/1.1  100` as an interim answer: such a
    head would carry a `Connection: keep-alive` past the proxy, and Chromium would send its
    next request down the connection, unchecked. The connection is cut instead."""
    async with Upstream(answer=head + b"Content-Length: 2\r\n\r\nhi") as server:
        reader, writer = await talk(proxy, (
            f"GET http://127.0.0.1:{server.port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        ))  # fmt: skip
        try:
            got = await asyncio.wait_for(reader.readuntil(b"\r\n\r\nhi"), 5)
        except asyncio.IncompleteReadError as exc:
            got = exc.partial
        writer.close()
    assert b"keep-alive" not in got.lower()


@pytest.mark.parametrize("target", ["a]b:443", "[a:b]:443", "a/b@127.0.0.2:443"])
async def test_a_host_the_check_cannot_read_is_answered_400_not_an_unhandled_error(proxy, target):
    """urlsplit refuses the first two with ValueError, which left the connection's task as an
    error asyncio logs ("Unhandled exception in client_connected_cb"); the third it reads as
    the host `a`: a host the check reads otherwise is no host at all."""
    errors: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
    reader, writer = await talk(proxy, f"CONNECT {target} HTTP/1.1\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    await asyncio.sleep(0.05)  # the connection's task done, its end reported
    assert errors == []
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")


async def test_a_page_refused_again_and_again_leaves_a_short_list_for_the_agent(tmp_path):
    """A page asking for a refused address in a loop (a thousand refusals a second, seen in
    Chromium) grew the list kept for the agent's next step without end while the chat
    waited, and the step's result with it."""
    policy = Policy()
    guard = RequestGuard(lambda: policy, FileCopies(tmp_path))
    checking = CheckingProxy(lambda: policy, guard.tell)
    await checking.start()
    try:
        for number in range(100):
            reader, writer = await talk(
                checking, f"GET http://127.0.0.2:9/{number} HTTP/1.1\r\nHost: 127.0.0.2\r\n\r\n"
            )
            assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 403")
            writer.close()
    finally:
        await checking.close()
    refused = guard.take_refused()
    assert len(refused) <= 21 and "http://127.0.0.2:9/0 resolves" in refused[0]
    assert refused[-1].endswith("and 80 more requests refused")
    assert guard.take_refused() == []


async def test_proxies_sharing_a_budget_hold_no_more_connections_than_it_allows():
    """A connection past the budget waits in the kernel, unaccepted, until one closes."""
    shared = Budget(2)
    proxies = [CheckingProxy(Policy, lambda _: None, shared=shared) for _ in range(2)]
    for each in proxies:
        await each.start()
    try:
        first = await talk(proxies[0], "")
        await talk(proxies[1], "")  # the two the budget allows, both quiet
        reader, writer = await talk(proxies[1], "CONNECT 127.0.0.2:9 HTTP/1.1\r\n\r\n")
        with pytest.raises(TimeoutError):  # connected in the kernel, but not taken
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 0.3)
        assert shared.open == 2
        first[1].close()  # room again: the third is taken and answered
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert answer.startswith(b"HTTP/1.1 403 Forbidden")
        writer.close()
    finally:
        for each in proxies:
            await each.close()
    assert shared.open == 0  # every connection given back once cut


@dataclass(frozen=True)
class SlowPolicy(Policy):
    """Resolves as a DNS server that takes a second does (offline: one that never answers)."""

    def check_url(self, url: str) -> list[str]:
        time.sleep(1.0)
        return super().check_url(url)


async def test_slow_lookups_leave_the_loops_other_blocking_work_alone():
    """A command firing requests for names that resolve slowly: the lookups of the agents'
    loop's own blocking work (a tool's arguments, a session's start) do not wait behind."""
    proxy = CheckingProxy(SlowPolicy, lambda _: None)
    await proxy.start()
    try:
        clients = [await talk(proxy, f"CONNECT name-{n}.example:443 HTTP/1.1\r\n\r\n")
                   for n in range(40)]  # fmt: skip
        await asyncio.sleep(0.1)  # the lookups have started
        began = time.monotonic()
        await asyncio.to_thread(lambda: None)
        waited = time.monotonic() - began
        for _, writer in clients:
            writer.close()
    finally:
        await proxy.close()
    assert waited < 0.5


async def test_a_loop_of_refused_requests_does_not_flood_the_log(proxy, caplog):
    """A command asking for a refused address in a loop made a log line each time (3,400
    a second in a probe); the agent hears of the first ones, and so does the log."""
    caplog.set_level(logging.INFO, logger="helpers.checking_proxy")
    for _ in range(60):
        reader, writer = await talk(proxy, "CONNECT 127.0.0.2:9 HTTP/1.1\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 403")
        writer.close()
    await proxy.close()
    lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(lines) == LOGGED_REFUSALS + 1
    assert lines[-1].endswith(f"and {60 - LOGGED_REFUSALS} more refused")


def test_a_proxy_dropped_unclosed_lets_its_port_go():
    """A chat's browser never closed (its chat dropped from memory, a test's runtime ended)
    left its proxy's port on the list of Cadre's own for the process's life: refused to
    every agent, and to a test's web site given the port again (failed a full run once)."""

    async def started() -> tuple[CheckingProxy, int]:
        proxy = CheckingProxy(OutboundPolicy, lambda _refusal: None)
        return proxy, int((await proxy.start()).rsplit(":", 1)[1])

    proxy, port = asyncio.run(started())  # its runtime ends with the proxy never closed
    assert port in fresh_ports()
    listening = proxy._listening
    del proxy
    gc.collect()
    assert listening is not None
    listening.close()
    assert port not in fresh_ports()


async def test_a_closed_proxy_lets_its_port_go_once():
    from helpers import own_ports

    proxy = CheckingProxy(OutboundPolicy, lambda _refusal: None)
    port = int((await proxy.start()).rsplit(":", 1)[1])
    own_ports.add(port)  # another listener of Cadre's holds the same port number meanwhile
    await proxy.close()
    del proxy
    gc.collect()  # the closed proxy's own hold, let go at its close, is not let go again
    assert port in fresh_ports()
    own_ports.remove(port)
    assert port not in fresh_ports()


def fresh_ports() -> frozenset[int]:
    """Cadre's ports, the other Cadres' read again now (they are kept for a second)."""
    from helpers import own_ports

    own_ports._others = (-own_ports.FRESH_FOR, frozenset())
    return own_ports.listening()
