"""Redirects in the browser are held to the outbound policy, in real Chromium.

Playwright's routing never sees the request a redirect makes; the checking proxy
each chat's context goes through does (browsing/proxy.py). Here 127.0.0.1 stands
for the internet and 127.0.0.2 for a private neighbour the policy refuses.
"""

from __future__ import annotations

import asyncio
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
    def check_address(self, address: str, url: str = "") -> None:
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
    })  # fmt: skip
    yield public, neighbour
    public.stop()
    neighbour.stop()


async def browse(tmp_path: Path, *urls: str) -> list[object]:
    """Open each URL in a chat's browser; a step's result, or the error it raised."""
    host, browser = BrowserHost(), ChatBrowser(tmp_path / "browser")
    results: list[object] = []
    try:
        await browser.start(host, find_executable("") or "", RefusesTheNeighbour(), 15,
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


def test_a_page_redirected_to_a_refused_address_is_refused_and_left(sites, tmp_path):
    public, neighbour = sites
    refused, (text, _) = asyncio.run(browse(tmp_path, public.url + "/away"))
    assert isinstance(refused, RepairableException)
    assert "a private neighbour, refused" in str(refused)
    assert neighbour.hits == [] and "admin password" not in text
