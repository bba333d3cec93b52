"""The browser tool through the loop, against a local website, driven by the scripted model."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import socket
import threading
import time

import pytest

from core.agent_types import UserMessage
from helpers.folders import chat_dir
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is
from tests.support.web_pages import start_site


@pytest.fixture(scope="module")
def site():
    website = start_site()
    yield website
    website.stop()


def steps(context) -> list:
    return [item for item in context.log.items if item.type == "browser"]


def run(context, llm, *calls: tuple[str, dict]) -> list[str]:
    llm.script(*[Reply(reply(name, **args)) for name, args in calls], Reply(answer("done")))
    context.communicate(UserMessage("browse")).result(120)
    return [item.content for item in steps(context)]


def test_read_fill_submit_download_and_a_hanging_page(make_context, llm, usr_dir, site):
    context = make_context(browser_timeout=4)
    results = run(
        context, llm,
        ("browser:open", {"url": site.url + "/"}),
        ("browser:click", {"target": "Search form"}),
        ("browser:select", {"target": "select", "option": "large", "by": "css"}),
        ("browser:type", {"target": "1", "text": "blue lamps"}),
        ("browser:click", {"target": "3"}),
        ("browser:open", {"url": site.url + "/script"}),
        ("browser:back", {}),
        ("browser:tabs", {}),
        ("browser:open", {"url": site.url + "/"}),
        ("browser:click", {"target": "Download the report"}),
        ("browser:open", {"url": site.url + "/hang"}),
        ("browser:screenshot", {}),
        ("browser:open", {"url": site.url + "/huge"}),
    )  # fmt: skip
    home, form, _, _, found, script, back, tabs, _, download, hang, shot, huge = results
    assert "# Welcome to the test shop" in home and "[Search form][1]" in home
    assert "hidden words" not in home
    assert '[1: text "Query"]' in form and '[3: button "Search now"]' in form
    assert "You searched for blue lamps (large)" in found
    assert "Written by JavaScript 42" in script
    assert "Page: Results" in back
    assert "1. Test shop" not in tabs and "(current)" in tabs
    assert "Downloaded: downloads/report.txt (12 bytes)" in download
    assert (usr_dir / "workdir/downloads/report.txt").read_text() == "report data\n"
    assert "did not finish loading within 4 s" in hang and "The top arrived." in hang
    assert "Screenshot saved:" in shot
    # A huge page: read whole up to a bound, then the long-result rules keep history small.
    assert len(huge) < 250_000 and "more characters: scroll" in huge
    [kept] = [m.content for m in context.agent0.history.current.messages
              if "Page: Huge" in str(m.content)]  # fmt: skip
    assert "characters cut here. The whole result is saved as" in str(kept)
    assert len(str(kept)) < 25_000
    # Every step shows its page in the log, with a screenshot the page can load.
    item = steps(context)[0]
    assert item.kvps["title"] == "Test shop" and item.kvps["url"] == site.url + "/"
    name = item.kvps["screenshot"].rsplit("/", 1)[1]
    assert (usr_dir / "chats" / context.id / "browser/shots" / name).stat().st_size > 1000


def test_outbound_policy_refuses_private_addresses_and_files_outside(
    make_context, llm, usr_dir, site, tmp_path
):
    outside = tmp_path / "secret.html"
    outside.write_text("<p>private</p>")
    inside = usr_dir / "workdir" / "page.html"
    inside.parent.mkdir(parents=True)
    inside.write_text("<title>Local file</title><p>in the work folder</p>")
    context = make_context(outbound_private="refuse")
    results = run(
        context, llm,
        ("browser:open", {"url": site.url + "/"}),
        ("browser:open", {"url": outside.as_uri()}),
        ("browser:open", {"url": inside.as_uri()}),
        ("document_query", {"document": site.url + "/", "questions": ["What is sold?"]}),
    )  # fmt: skip
    loopback, outside_file, inside_file = results
    assert "127.0.0.1, a local or private address: refused by the setting" in loopback
    assert "may only name files in the work folder" in outside_file
    assert "in the work folder" in inside_file and "Page: Local file" in inside_file
    [document] = [item.content for item in context.log.items if item.type == "tool"]
    assert "127.0.0.1, a local or private address: refused by the setting" in document


#: The secret key's content in the file-rules test: if it shows anywhere, the file was read.
KEY_CANARY = b"key-canary-2718\x00\x01binary"
#: A page in the work folder of the file-rules test: a script, a frame and a picture of the
#: hard link, a link to download it, and a script that tries to read another file.
PAGE = """<title>Local</title><p>plain words</p><p id="w"></p><p id="r"></p>
<script src="words.js"></script><iframe src="link"></iframe><img src="link">
<a href="link" download>Get the key</a>
<script>const xhr = new XMLHttpRequest();
try { xhr.open("GET", "words.js", false); xhr.send(); r.textContent = "read: " + xhr.responseText }
catch (e) { r.textContent = "a script cannot read files" }</script>"""


def test_file_urls_follow_the_rules_text_editor_follows(make_context, llm, usr_dir, tmp_path):
    """Chromium never opens a file itself: the guard answers with what it read through the
    checked descriptor (helpers/confine.py), so a hard link to the secret key, a FIFO and a
    link out are refused, and a page cannot download them either."""
    key = usr_dir / "secret_key"
    key.write_bytes(KEY_CANARY)
    key.chmod(0o600)
    work = usr_dir / "workdir"
    work.mkdir()
    os.link(key, work / "link")  # what a sandboxed command can do
    os.mkfifo(work / "pipe")
    (tmp_path / "outside.html").write_text("<p>outside words</p>")
    (work / "out.html").symlink_to(tmp_path / "outside.html")
    (work / "words.js").write_text('document.getElementById("w").textContent = "scripted words"')
    (work / "page.html").write_text(PAGE)
    context = make_context(browser_timeout=5)
    started = time.monotonic()
    linked, page, clicked, piped, out, folder = run(
        context, llm,
        ("browser:open", {"url": (work / "link").as_uri()}),
        ("browser:open", {"url": (work / "page.html").as_uri()}),
        ("browser:click", {"target": "Get the key"}),
        ("browser:open", {"url": (work / "pipe").as_uri()}),
        ("browser:open", {"url": (work / "out.html").as_uri()}),
        ("browser:open", {"url": work.as_uri()}),
    )  # fmt: skip
    assert "link is a hard link" in linked
    assert "Page: Local" in page and "plain words" in page and "scripted words" in page
    assert page.count("link is a hard link") >= 2  # the frame's and the picture's, refused
    # A part of a page is read by Chromium from a copy (as a file), not answered: answered,
    # it counted as the page's own, and a script could read every file in the work folder.
    assert "a script cannot read files" in page
    assert "Downloaded" not in clicked and "link is a hard link" in clicked
    assert "pipe is not a regular file" in piped
    assert "may only name files in the work folder" in out
    assert "[page.html]" in folder and "[pipe]" in folder  # a listing of names only
    assert "[../]" not in folder  # no way up out of the work folder
    assert time.monotonic() - started < 30  # the FIFO hung nothing (a step may take 5 s)
    assert not (work / "downloads").exists()
    assert all("key-canary" not in r.text for r in llm.requests)


def test_a_missing_browser_program_tells_the_model_what_to_install(make_context, llm, tmp_path):
    missing = make_context(browser_executable=str(tmp_path / "no-chromium"))
    [told] = run(missing, llm, ("browser:open", {"url": "http://127.0.0.1:9/"}))
    assert "no-chromium' (setting browser_executable) was not found; install Chromium" in told


def test_each_step_shows_its_screenshot_and_the_chat_closes_its_browser(server, http, llm, site):
    llm.add_rule(model_is("util-model"), Reply("Browsing"))  # the chat's name
    chats = server.app.extensions["cadre.chats"]
    context = chats.new_chat()
    run(context, llm, ("browser:open", {"url": site.url + "/form"}))
    shot = steps(context)[0].kvps["screenshot"]
    assert shot.startswith(f"/api/chats/{context.id}/browser/shots/step-")
    picture = http.get(shot)
    assert picture.status_code == 200 and picture.mimetype == "image/jpeg"
    assert picture.data[:2] == b"\xff\xd8"
    assert http.get(shot.replace("step-", "..%2Fstep-")).status_code == 404
    assert http.get(f"/api/chats/{context.id}/browser/shots/chat.json").status_code == 404
    assert context.browser.open  # kept between steps
    fresh = chats.reset(context.id)
    assert not context.browser.open and not fresh.browser.open
    run(fresh, llm, ("browser:open", {"url": site.url + "/"}))
    assert fresh.browser.open
    chats.delete(fresh.id)
    assert not fresh.browser.open


def test_a_browser_screenshot_is_looked_at_with_vision_load(make_context, llm, site):
    """What the issue asks: browser screenshots can be looked at like any image."""
    context = make_context(chat_vision="on")
    # The chat's pictures are numbered in turn: the open step's log picture is step-1.jpg.
    shot = chat_dir(context.id) / "browser" / "shots" / "page-2.png"
    [_, told] = run(
        context, llm,
        ("browser:open", {"url": site.url + "/"}),
        ("browser:screenshot", {}),
        ("vision_load", {"paths": [str(shot)]}),
    )  # fmt: skip
    assert f"Screenshot saved: {shot}" in told
    last = llm.chat_requests()[-1].body
    parts = [p for m in last["messages"] if isinstance(m["content"], list) for p in m["content"]]
    [image] = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    assert image.startswith("data:image/png;base64,")
    assert base64.b64decode(image.split(",", 1)[1]) == shot.read_bytes()


class EchoSocketServer:
    """A WebSocket server on loopback, written out (the handshake and one text frame each
    way): it records each connection and greets it with "hello from the server"."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.connections += 1
            with conn:
                request = conn.recv(4096).decode("latin-1")
                key = re.search(r"(?i)sec-websocket-key: *(\S+)", request)
                if key is None:
                    continue
                accept = hashlib.sha1((key[1] + WS_GUID).encode()).digest()
                conn.sendall(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\nSec-WebSocket-Accept: "
                    + base64.b64encode(accept) + b"\r\n\r\n"
                )  # fmt: skip
                text = b"hello from the server"
                conn.sendall(bytes([0x81, len(text)]) + text)
                conn.recv(4096)  # until the page closes or goes away

    def stop(self) -> None:
        self.listener.close()


WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455

SOCKET_PAGE = """<title>Socket</title><p id="state">waiting</p><script>
const ws = new WebSocket("ws://127.0.0.1:{port}/");
const state = document.getElementById("state");
ws.onmessage = (event) => {{ state.textContent = "got " + event.data; }};
ws.onclose = (event) => {{ if (event.code !== 1005) state.textContent = "socket closed"; }};
</script>"""


@pytest.mark.parametrize(
    ("setting", "shown"), [("refuse", "socket closed"), ("allow", "got hello")]
)
def test_a_pages_websocket_is_held_to_the_outbound_policy(
    make_context, llm, usr_dir, setting, shown
):
    server = EchoSocketServer()
    try:
        page = usr_dir / "workdir" / "socket.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(SOCKET_PAGE.format(port=server.port))
        context = make_context(outbound_private=setting)
        results = run(
            context, llm,
            ("browser:open", {"url": page.as_uri()}),
            ("browser:wait_for", {"text": shown}),
            ("browser:read", {}),
        )  # fmt: skip
        assert shown in results[-1]
        if setting == "refuse":  # never reached the server; the agent is told why
            assert server.connections == 0
            told = "127.0.0.1, a local or private address: refused by the setting"
            assert told in "".join(results)
        else:
            assert server.connections == 1
    finally:
        server.stop()
