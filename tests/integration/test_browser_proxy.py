"""Redirects in the browser are held to the outbound policy, in real Chromium.

Playwright's routing never sees the request a redirect makes; the checking proxy
each chat's context goes through does (helpers/checking_proxy.py). Here 127.0.0.1 stands
for the internet and 127.0.0.2 for a private neighbour the policy refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import socketserver
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from browsing.host import BrowserHost, find_executable
from browsing.session import ChatBrowser
from helpers.errors import RepairableException
from helpers.outbound import OutboundPolicy, OutboundRefused

NEIGHBOUR = "127.0.0.2"


@dataclass(frozen=True)
class RefusesTheNeighbour(OutboundPolicy):
    def check_address(self, address: str, url: str = "", port: int | None = None) -> None:
        if address == NEIGHBOUR:
            raise OutboundRefused(f"{url} resolves to {address}: a private neighbour, refused")


class Site:
    """A threaded HTTP server on `host` answering from `pages` (path: (status, headers, body))."""

    def __init__(self, host: str, pages: dict[str, tuple[int, dict[str, str], str]]) -> None:
        self.hits: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                site.hits.append(self.path)
                status, headers, body = pages.get(self.path, (404, {}, "not here"))
                data = body.encode()
                self.send_response(status)
                for name, value in {"Content-Type": "text/html", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


#: A form Chromium's autofill asks Google's servers about (content-autofill.googleapis.com).
SIGN_UP = (
    '<title>Sign up</title><form action="/done" method="post">'
    '<label>Name <input name="name" autocomplete="name"></label>'
    '<label>Email <input type="email" name="email" autocomplete="email"></label>'
    '<label>Street <input name="street" autocomplete="street-address"></label>'
    '<label>Zip <input name="zip" autocomplete="postal-code"></label>'
    '<label>Password <input type="password" name="pw" autocomplete="new-password"></label>'
    "<button>Send</button></form>"
)


@pytest.fixture
def sites():
    neighbour = Site(NEIGHBOUR, {"/secret": (200, {}, "<title>Router</title>admin password")})
    secret = f"{neighbour.url}/secret"
    public = Site("127.0.0.1", {
        "/": (200, {}, '<title>Public</title><p>front page</p>'
                       '<iframe src="/framed"></iframe><img src="/picture">'),
        "/framed": (302, {"Location": secret}, ""),
        "/picture": (301, {"Location": secret}, ""),
        "/away": (302, {"Location": secret}, ""),
        "/form": (200, {}, SIGN_UP + '<img src="/picture">'),
    })  # fmt: skip
    yield public, neighbour
    public.stop()
    neighbour.stop()


async def browse(tmp_path: Path, *urls: str) -> list[object]:
    """Open each URL in a chat's browser; a step's result, or the error it raised."""
    host, browser = BrowserHost(), ChatBrowser(tmp_path / "browser")
    results: list[object] = []
    policy = RefusesTheNeighbour(work_dir=tmp_path / "work")
    try:
        await browser.start(host, find_executable("") or "", policy, 15,
                            tmp_path / "downloads")  # fmt: skip
        for url in urls:
            try:
                results.append(await browser.goto(url))
            except RepairableException as exc:
                results.append(exc)
        results.append(await browser.read())
    finally:
        await browser.close()
        await host.close()
    return results


def test_a_sub_resource_redirected_to_a_refused_address_never_reaches_it(sites, tmp_path):
    public, neighbour = sites
    step, (text, _) = asyncio.run(browse(tmp_path, public.url + "/"))
    assert "front page" in text and "admin password" not in text
    assert {"/framed", "/picture"} <= set(public.hits)
    assert neighbour.hits == []  # neither the frame nor the image got there
    assert any("a private neighbour, refused" in told for told in step.refused)


def test_chromiums_own_requests_are_refused_but_not_told_as_the_pages(sites, tmp_path):
    """A form made Chromium ask its autofill service; the refusal ("cannot resolve
    content-autofill.googleapis.com") was reported to the agent as the page's."""
    public, _ = sites
    first, second, _ = asyncio.run(browse(tmp_path, public.url + "/form", public.url + "/form"))
    told = first.refused + second.refused
    assert any("a private neighbour, refused" in refusal for refusal in told), told
    assert not [refusal for refusal in told if "googleapis" in refusal], told


def test_a_page_redirected_to_a_refused_address_is_refused_and_left(sites, tmp_path):
    public, neighbour = sites
    refused, (text, _) = asyncio.run(browse(tmp_path, public.url + "/away"))
    assert isinstance(refused, RepairableException)
    assert "a private neighbour, refused" in str(refused)
    assert neighbour.hits == [] and "admin password" not in text


class KeepingSite:
    """A raw server on 127.0.0.1 answering every request on a connection. Its page asks for a
    picture, whose answer says `Connection: keep-alive` in a way a proxy may miss (`hidden`
    is its head before Content-Length), then for a second picture: a connection kept would
    carry the second request, unchecked. Records (connection number, request line)."""

    def __init__(self, hidden: bytes) -> None:
        self.requests: list[tuple[int, str]] = []
        connections = itertools.count(1)  # numbered as accepted (Chromium opens some ahead)
        site = self
        page = (b"<title>First</title><script>onload = () => { new Image().src = '/picture';"
                b" setTimeout(() => { new Image().src = '/again' }, 300) }</script>")  # fmt: skip

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                number = next(connections)
                while line := self.rfile.readline():
                    site.requests.append((number, line.decode("latin-1").strip()))
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    kept = b"/picture " in line
                    self.wfile.write(
                        (hidden if kept else b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
                        + b"Content-Length: %d\r\n\r\n%s" % (len(page), page)
                    )

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("hidden", [
    b"HTTP/1.1 200 OK\r\nX-Note: a bare LF ends this line\nConnection: keep-alive\r\n",
    b"HTTP/1.1 200 OK\nConnection: keep-alive\r\n",
    b"HTTP/1.1  100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\n",
])  # fmt: skip
def test_an_answer_cannot_keep_its_connection_for_a_next_request(tmp_path, hidden):
    """Chromium reads a bare LF as a line end and `HTTP/1.1  100` as an interim answer: a
    proxy reading otherwise passed such a head's keep-alive on, and Chromium sent its next
    request down the same connection, past the check (to the same host in this Chromium,
    which pools by destination; any host, were it to pool by proxy)."""
    site = KeepingSite(hidden)

    async def visit() -> None:
        host, browser = BrowserHost(), ChatBrowser(tmp_path / "browser")
        try:
            await browser.start(host, find_executable("") or "", RefusesTheNeighbour(), 15,
                                tmp_path / "downloads")  # fmt: skip
            await browser.goto(site.url + "/")
            for _ in range(50):  # the second picture is asked for 300 ms after the load
                if any(line.startswith("GET /again") for _, line in site.requests):
                    break
                await asyncio.sleep(0.1)
        finally:
            await browser.close()
            await host.close()

    try:
        asyncio.run(visit())
    finally:
        site.stop()
    numbers = [number for number, _ in site.requests]
    assert any("/again" in line for _, line in site.requests), site.requests
    assert len(set(numbers)) == len(numbers), site.requests  # one request per connection


def test_a_page_cannot_send_udp_past_the_proxy_with_webrtc(tmp_path):
    """WebRTC's UDP (a STUN server's address is the page's to name) goes past any HTTP proxy
    unless Chromium is told to send no UDP it cannot proxy: it reached the neighbour."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind((NEIGHBOUR, 0))
        udp.settimeout(3)
        stun = f"stun:{NEIGHBOUR}:{udp.getsockname()[1]}"
        public = Site("127.0.0.1", {"/": (200, {}, (
            f"<title>Call</title><script>const call = new RTCPeerConnection({{iceServers: "
            f"[{{urls: '{stun}'}}]}}); call.createDataChannel('x');"
            " call.createOffer().then(offer => call.setLocalDescription(offer))</script>"
        ))})  # fmt: skip
        try:
            asyncio.run(browse(tmp_path, public.url + "/"))  # the offer gathers while it reads
            with contextlib.suppress(TimeoutError):
                pytest.fail(f"the neighbour got a datagram: {udp.recv(2048)[:20]!r}")
        finally:
            public.stop()


def test_a_file_a_page_embeds_is_read_only_inside_the_work_folder(tmp_path):
    """File requests never reach the proxy: the guard's routing checks them."""
    secret = tmp_path / "secret.html"
    secret.write_text("<p>the key is 42</p>")
    page = tmp_path / "work" / "page.html"
    page.parent.mkdir()
    (page.parent / "inside.html").write_text("<p>inside words</p>")
    page.write_text(f'<title>Local</title><iframe src="inside.html"></iframe>'
                    f'<iframe src="{secret.as_uri()}"></iframe>')  # fmt: skip

    async def frames() -> tuple[object, list[str]]:
        host, browser = BrowserHost(), ChatBrowser(tmp_path / "browser")
        try:
            await browser.start(host, find_executable("") or "",
                                RefusesTheNeighbour(work_dir=tmp_path / "work"), 15,
                                tmp_path / "downloads")  # fmt: skip
            step = await browser.goto(page.as_uri())
            texts = [await frame.inner_text("body") for frame in browser.page.frames[1:]]
            return step, texts
        finally:
            await browser.close()
            await host.close()

    step, texts = asyncio.run(frames())
    assert "inside words" in texts and not any("the key is 42" in text for text in texts)
    assert any("may only name files in the work folder" in told for told in step.refused)
