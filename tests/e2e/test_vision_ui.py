"""Images in Chromium: a pasted image shows as a thumbnail in the composer, goes with the
message to a model that sees, and shows in the log, where it opens full size."""

from __future__ import annotations

import base64
import os
from urllib.parse import urljoin

import pytest
from playwright.sync_api import expect

from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is
from tests.support.images import png

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


@pytest.fixture
def vision_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CADRE_CHAT_VISION", "on")  # before the server starts


def test_a_pasted_image_is_shown_sent_and_kept_in_the_log(vision_on, llm, page):
    llm.add_rule(model_is("util-model"), Reply("A picture"))
    llm.script(Reply(answer("A small orange picture.")))
    page.locator("html[data-routed]").wait_for(state="attached")
    page.evaluate(PASTE, base64.b64encode(PICTURE).decode())
    chip = page.get_by_test_id("attachment")
    expect(chip).to_contain_text("pasted-")
    expect(chip.get_by_test_id("attachment-thumb")).to_be_visible()

    page.get_by_test_id("message-input").fill("What is in this picture?")
    page.get_by_test_id("send").click()
    expect(page.locator(RESPONSE)).to_contain_text("A small orange picture.", timeout=60_000)
    expect(page.get_by_test_id("attachment")).to_have_count(0)  # sent: the box is empty

    thumb = page.locator(USER).get_by_test_id("image-thumb")
    expect(thumb).to_be_visible()
    page.wait_for_function(
        "el => el.complete && el.naturalWidth === 64", arg=thumb.locator("img").element_handle()
    )
    href = thumb.get_attribute("href") or ""
    assert href.startswith("/api/chats/") and "/images/attachments/pasted-" in href
    full = page.request.get(urljoin(page.url, href))  # the page's session: logged in
    assert full.ok and full.body() == PICTURE and full.headers["content-type"] == "image/png"

    calls = [r for r in llm.chat_requests() if r.body["model"] == "chat-model"]
    parts = [p for m in calls[-1].body["messages"] if isinstance(m["content"], list)
             for p in m["content"] if p["type"] == "image_url"]  # fmt: skip
    assert [p["image_url"]["url"] for p in parts] == [
        "data:image/png;base64," + base64.b64encode(PICTURE).decode()
    ]
    shots = os.environ.get("VISION_SHOTS")  # screenshots to look at by hand, not in the repo
    if shots:
        page.screenshot(path=f"{shots}/desktop.png")
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=f"{shots}/phone.png")
        page.evaluate(PASTE, base64.b64encode(PICTURE).decode())
        expect(page.get_by_test_id("attachment-thumb")).to_be_visible()
        page.screenshot(path=f"{shots}/phone-composer.png")
