"""The browser tool: time of `open` + `read` on a local page, and memory with three chats.

Also the time to open a page of 300 small images on a local plain-http server:
each is a request, and through the checking proxy (helpers/checking_proxy.py) a
connection of its own, so this row shows what the proxy costs a busy page.

In process, on an agents' runtime like Cadre's: three chats' browser sessions
(browsing/session.py) in one Chromium, each holding the local test page
(tests/support/web_pages.py). Memory is the proportional set size (PSS, shared
pages split between their processes) of this process plus the Playwright
driver and Chromium under it, before the browser starts and with the three
pages open.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.harness import Row
from browsing.host import shared_host
from browsing.session import ChatBrowser
from helpers.outbound import OutboundPolicy
from helpers.runtime import AgentRuntime
from tests.support.web_pages import start_site


def pss_mb(pid: int) -> float:
    """The process's proportional set size (0 if it has ended)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree(pid: int) -> list[int]:
    """`pid` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def memory_mb() -> dict[str, float]:
    """PSS of this process and those under it, by kind: cadre, driver (node), chromium."""
    kinds = {"cadre": 0.0, "driver": 0.0, "chromium": 0.0}
    for pid in tree(os.getpid()):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        kind = "cadre" if pid == os.getpid() else "driver" if "node" in name else "chromium"
        kinds[kind] += pss_mb(pid)
    return kinds


#: Images on the gallery page.
GALLERY_IMAGES = 300
_PIXEL = b'<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>'


class _Gallery(BaseHTTPRequestHandler):
    """A page of GALLERY_IMAGES images, each its own request (kept-alive, HTTP/1.1)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/":
            images = "".join(f'<img src="/{n}.svg">' for n in range(GALLERY_IMAGES))
            body, kind = f"<title>Gallery</title>{images}".encode(), "text/html"
        else:
            body, kind = _PIXEL, "image/svg+xml"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def run(quick: bool) -> list[Row]:
    site = start_site()
    gallery = ThreadingHTTPServer(("127.0.0.1", 0), _Gallery)
    threading.Thread(target=gallery.serve_forever, daemon=True).start()
    gallery_url = f"http://127.0.0.1:{gallery.server_address[1]}/"
    runtime = AgentRuntime().start()
    host = shared_host(runtime)
    try:
        with tempfile.TemporaryDirectory(prefix="cadre-bench-browser-") as scratch:
            before = sum(memory_mb().values())
            chats = [ChatBrowser(Path(scratch) / f"chat{n}") for n in range(3)]

            async def start(chat: ChatBrowser) -> None:
                await chat.start(host, "", OutboundPolicy(), 30, Path(scratch) / "downloads")

            async def open_and_read(chat: ChatBrowser, url: str) -> str:
                await chat.goto(url)
                return (await chat.read())[0]

            for chat in chats:
                runtime.submit(start(chat)).result(60)
            samples = []
            for _ in range(5 if quick else 20):
                began = time.perf_counter()
                text = runtime.submit(open_and_read(chats[0], site.url + "/")).result(60)
                samples.append(time.perf_counter() - began)
                assert "Welcome to the test shop" in text, text[:200]
            gallery_samples = []
            for n in range(3 if quick else 7):  # a fresh chat each time: Chromium slows on
                viewer = ChatBrowser(Path(scratch) / f"gallery{n}")  # the same tab's reloads
                runtime.submit(start(viewer)).result(60)
                began = time.perf_counter()
                runtime.submit(viewer.goto(gallery_url)).result(60)
                gallery_samples.append(time.perf_counter() - began)
                runtime.submit(viewer.close()).result(30)
            for chat in chats[1:]:
                runtime.submit(open_and_read(chat, site.url + "/form")).result(60)
            parts = memory_mb()
            with_pages = sum(parts.values())
            for chat in chats:
                runtime.submit(chat.close()).result(30)
    finally:
        runtime.stop()
        site.stop()
        gallery.shutdown()
        gallery.server_close()
    return [
        Row("browser: open + read of the local test page (median; busy shared machine)",
            statistics.median(samples) * 1000, "ms"),
        Row(f"browser: open of a page of {GALLERY_IMAGES} images, each a request through the "
            "checking proxy (median)", statistics.median(gallery_samples) * 1000, "ms"),
        Row("browser: memory (PSS) with three chats each holding a page, Chromium included",
            with_pages, "MB", note=f"before the browser: {before:.0f} MB"),
        Row("browser: memory the three chats' browser adds", with_pages - before, "MB",
            note=f"driver {parts['driver']:.0f} MB, Chromium {parts['chromium']:.0f} MB"),
    ]  # fmt: skip
