"""Images in Chromium: an image pasted or dropped on the composer shows as a thumbnail
there, goes with the message to a model that sees, and shows in the log, where it opens
full size.

One run_ui.py with a chat model that sees (`chat_vision` on) serves the module; each test
makes its own chat in a fresh browser context.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from urllib.parse import urljoin

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import open_page
from tests.e2e.test_chat_ui import new_chat
from tests.support.agents import answer
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.images import png
from tests.support.live_web import live_server, warm_up
from tests.support.server_process import ServerProcess

PICTURE = png(64, 48)
USER = '[data-testid="log-item"][data-type="user"]'
RESPONSE = '[data-testid="log-item"][data-type="response"]'

PASTE = """b64 => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], "image.png", { type: "image/png" }));
  const options = { clipboardData: data, bubbles: true, cancelable: true };
  const event = new ClipboardEvent("paste", options);
  document.querySelector('[data-testid="message-input"]').dispatchEvent(event);
}"""
#: What a file dragged from the desktop carries: a DataTransfer holding one image File.
DRAGGED = """([b64, name]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type: "image/png" }));
  return data;
}"""


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server: FakeLLMServer) -> Iterator[ServerProcess]:
    """One run_ui.py for the module whose chat model sees (a server start costs seconds)."""
    server = live_server(tmp_path_factory.mktemp("vision-ui"), _fake_llm_server.base_url,
                         chat_vision="on", llm_retry_delay="0.01")  # fmt: skip
    warm_up(server, _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest, cadre: ServerProcess, llm: FakeLLMServer):
    """A fresh browser context's page on the module's server; the utility model names chats
    (a rule, so a late naming call never takes a reply a test scripted)."""
    llm.add_rule(model_is("util-model"), Reply("A picture"))
    yield from open_page(browser, request, cadre.url)


def send_and_check(page, llm: FakeLLMServer, question: str, name: str) -> None:
    """Send the composer's image with `question`; the log shows it as a thumbnail that opens
    the very file, and the model got it as an image part of that message."""
    llm.script(Reply(answer("A small orange picture.")))
    page.get_by_test_id("message-input").fill(question)
    page.get_by_test_id("send").click()
    expect(page.locator(RESPONSE)).to_contain_text("A small orange picture.", timeout=60_000)
    expect(page.get_by_test_id("attachment")).to_have_count(0)  # sent: the box is empty

    thumb = page.locator(USER).get_by_test_id("image-thumb")
    expect(thumb).to_be_visible()
    page.wait_for_function(
        "el => el.complete && el.naturalWidth === 64", arg=thumb.locator("img").element_handle()
    )
    href = thumb.get_attribute("href") or ""
    assert href.startswith("/api/chats/") and f"/images/attachments/{name}" in href
    full = page.request.get(urljoin(page.url, href))  # the page's session: logged in
    assert full.ok and full.body() == PICTURE and full.headers["content-type"] == "image/png"

    calls = [r for r in llm.chat_requests() if r.body["model"] == "chat-model"
             and question in str(r.body["messages"])]  # fmt: skip
    parts = [p for m in calls[-1].body["messages"] if isinstance(m["content"], list)
             for p in m["content"] if p["type"] == "image_url"]  # fmt: skip
    assert [p["image_url"]["url"] for p in parts] == [
        "data:image/png;base64," + base64.b64encode(PICTURE).decode()
    ]


def test_a_pasted_image_is_shown_sent_and_kept_in_the_log(llm, page):
    new_chat(page)
    page.evaluate(PASTE, base64.b64encode(PICTURE).decode())
    chip = page.get_by_test_id("attachment")
    expect(chip).to_contain_text("pasted-")
    expect(chip.get_by_test_id("attachment-thumb")).to_be_visible()

    send_and_check(page, llm, "What is in this picture?", "pasted-")
    shots = os.environ.get("VISION_SHOTS")  # screenshots to look at by hand, not in the repo
    if shots:
        page.screenshot(path=f"{shots}/desktop.png")
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=f"{shots}/phone.png")
        page.evaluate(PASTE, base64.b64encode(PICTURE).decode())
        expect(page.get_by_test_id("attachment-thumb")).to_be_visible()
        page.screenshot(path=f"{shots}/phone-composer.png")


def test_an_image_dropped_on_the_composer_is_shown_and_sent(llm, page):
    """The drag-and-drop a user does from the desktop, event by event: the composer marks
    itself a drop target while a file is held over it, and takes the dropped image."""
    new_chat(page)
    dragged = page.evaluate_handle(DRAGGED, [base64.b64encode(PICTURE).decode(), "orange.png"])
    box = page.get_by_test_id("message-input")
    box.dispatch_event("dragenter", {"dataTransfer": dragged})
    box.dispatch_event("dragover", {"dataTransfer": dragged})
    expect(page.locator(".chat")).to_have_class(re.compile(r"\bdrop-target\b"))
    box.dispatch_event("drop", {"dataTransfer": dragged})
    expect(page.locator(".chat")).not_to_have_class(re.compile(r"\bdrop-target\b"))
    chip = page.get_by_test_id("attachment")
    expect(chip).to_contain_text("orange.png")
    thumb = chip.get_by_test_id("attachment-thumb")
    expect(thumb).to_be_visible()
    page.wait_for_function("el => el.complete && el.naturalWidth === 64",
                           arg=thumb.element_handle())  # fmt: skip

    send_and_check(page, llm, "And this dropped one?", "orange.png")
