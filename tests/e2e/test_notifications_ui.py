"""The notification history in Chromium: the bell's unread count, the list, mark read,
mark all read, clear, an entry's link to its chat, and which news becomes a toast.

One run_ui.py serves the module, with `notify_long_run` 0: every finished run is news
(the warm-up's too), so the "finished" entries show without waiting a minute.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import requests

from tests.e2e.conftest import open_page
from tests.e2e.test_chat_ui import RESPONSE, new_chat, send
from tests.support.agents import answer, reply
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Fail, FakeLLMServer, Reply, model_is
from tests.support.live_web import live_server, warm_up
from tests.support.server_process import ServerProcess

#: Generous: several test runs may share this machine's two cores.
WAIT_MS = 60_000
PHONE = {"width": 390, "height": 844}
ENTRY = '[data-testid="notification"]'


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server: FakeLLMServer) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("notifications")
    server = live_server(folder, _fake_llm_server.base_url, llm_retry_delay="0.01",
                         notify_long_run="0")  # fmt: skip
    warm_up(server, _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture
def view(browser, request, cadre, llm):
    """Fresh browser contexts' pages on the module's server, checked for JavaScript
    errors; the utility model names chats."""
    llm.add_rule(model_is("util-model"), Reply("Named chat"))
    opened = []

    def open_view(**options: object):
        pages = open_page(browser, request, cadre.url, **options)
        page = next(pages)
        page.set_default_timeout(WAIT_MS)
        opened.append(pages)
        return page

    yield open_view
    for pages in opened:
        next(pages, None)


def message_over_api(cadre: ServerProcess, chat_id: str | None, text: str) -> str:
    """A message to a chat the page does not show (a new one when `chat_id` is None), as
    a script or another client would send it; the chat's id."""
    key = json.loads((cadre.usr_dir / "settings.json").read_text())["api_key"]
    response = requests.post(f"{cadre.url}/api/v1/message", headers={"X-API-Key": key},
                             json={"message": text, "context_id": chat_id, "wait": False},
                             timeout=30)  # fmt: skip
    assert response.status_code == 200, response.text
    return response.json()["context_id"]


def unread(page, count: str) -> None:
    """Wait until the bell shows `count` unread ("" : none, the count hidden)."""
    badge = page.get_by_test_id("notifications-count")
    if count:
        page.wait_for_function(
            "n => document.querySelector('[data-testid=notifications-count]').textContent === n",
            arg=count,
        )
        assert badge.is_visible()
        assert page.get_by_test_id("notifications-open").get_attribute("aria-label") == (
            f"Notifications, {count} unread")  # fmt: skip
    else:
        badge.wait_for(state="hidden")


def entry(page, text: str):
    return page.locator(ENTRY).filter(has_text=text)


def test_history_unread_count_mark_read_and_links(view, llm, cadre):
    page = view(bypass_csp=True)  # axe-core is injected
    unread(page, "1")  # the warm-up run finished before the page opened: kept on the server

    # A notify_user message always toasts; the run it belongs to finishing in the chat
    # shown does not (and is read at once).
    llm.script(Reply(reply("notify_user", title="Halfway there", message="Tests **pass**",
                           type="success")), Reply(answer("Done.")))  # fmt: skip
    first = new_chat(page)
    send(page, "work")
    toast = page.get_by_test_id("toast").filter(has_text="Halfway there")
    toast.wait_for()
    assert toast.get_by_test_id("toast-open").count() == 0  # the chat is shown already
    # An agent's message is markdown: drawn as such, not as its asterisks.
    assert toast.locator("strong").filter(has_text="pass").count() == 1
    assert "**" not in toast.inner_text()
    page.locator(RESPONSE).filter(has_text="Done.").wait_for()

    page.get_by_test_id("notifications-open").click()
    dialog = page.get_by_test_id("notifications")
    dialog.wait_for()
    finished = entry(page, "Run finished").filter(has_text="Done.")
    finished.and_(page.locator('[data-read="true"]')).wait_for()
    assert page.get_by_test_id("toast").filter(has_text="Run finished").count() == 0
    unread(page, "2")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")

    # A run failing in another chat: a toast with a link, and one more unread.
    page.locator(f'[data-testid="chat-item"][data-chat-id="{first}"]').filter(
        has_text="Named chat").wait_for()  # fmt: skip
    new_chat(page)
    llm.script(Fail(status=401, message="bad provider key"))
    message_over_api(cadre, first, "again")
    failed_toast = page.get_by_test_id("toast").filter(has_text="Run failed: Named chat")
    failed_toast.wait_for()
    # In plain words with what to do, never the provider's raw text.
    assert "The provider refused the API key" in failed_toast.inner_text()
    assert "bad provider key" not in failed_toast.inner_text()
    assert failed_toast.get_by_test_id("toast-open").get_attribute("href") == f"#/chat/{first}"
    unread(page, "3")

    page.get_by_test_id("notifications-open").click()
    assert page.get_by_test_id("notifications-summary").inner_text() == "3 unread of 4"
    kinds = page.locator(ENTRY).evaluate_all(
        "els => els.map(e => [e.dataset.kind, e.dataset.read])")  # fmt: skip
    assert kinds == [["error", "false"], ["finished", "true"], ["notify", "false"],
                     ["finished", "false"]]  # fmt: skip
    found = axe_violations(page, '[data-testid="notifications"]')
    assert not found, describe(found)
    halfway = entry(page, "Halfway there")
    assert halfway.get_by_test_id("notification-message").locator("strong").inner_text() == "pass"
    halfway.get_by_test_id("notification-read").click()
    halfway.and_(page.locator('[data-read="true"]')).wait_for()
    unread(page, "2")

    # The entry's link opens its chat and marks it read.
    entry(page, "Run failed").get_by_test_id("notification-open").click()
    dialog.wait_for(state="hidden")
    page.wait_for_function("id => location.hash === '#/chat/' + id", arg=first)
    page.get_by_test_id("chat-title").filter(has_text="Named chat").wait_for()
    unread(page, "1")

    page.reload()  # kept on the server, read marks included
    unread(page, "1")
    page.get_by_test_id("notifications-open").click()
    page.get_by_test_id("notifications-read-all").click()
    unread(page, "")
    assert page.locator(f'{ENTRY}[data-read="false"]').count() == 0
    page.get_by_test_id("notifications-clear").click()
    page.get_by_test_id("confirm-ok").click()
    page.get_by_test_id("notifications-empty").wait_for()
    assert page.locator(ENTRY).count() == 0
    page.reload()
    page.get_by_test_id("notifications-open").click()
    page.get_by_test_id("notifications-empty").wait_for()


def overlaps(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])  # fmt: skip


def test_on_a_phone_the_count_shows_and_a_toast_leaves_the_composer_free(view, llm, cadre):
    page = view(viewport=PHONE, color_scheme="dark", bypass_csp=True)
    page.locator("html[data-routed]").wait_for(state="attached")
    llm.script(Reply(reply("notify_user", title="Report ready", message="Line. " * 80,
                           type="info")), Reply(answer("Sent.")))  # fmt: skip
    other = message_over_api(cadre, None, "report")
    toast = page.get_by_test_id("toast").filter(has_text="Report ready")
    toast.wait_for()
    toast.get_by_test_id("toast-open").wait_for()
    box = toast.bounding_box()
    for part in (page.get_by_test_id("message-input"), page.get_by_test_id("send"),
                 page.locator(".composer-bar")):  # fmt: skip
        assert not overlaps(box, part.bounding_box()), "a toast covers the composer"
    assert box["y"] >= 0 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]

    found = axe_violations(page, '[data-testid="toasts"]')
    assert not found, describe(found)
    toggle_count = page.get_by_test_id("chats-toggle-unread")
    toggle_count.wait_for()
    assert int(toggle_count.inner_text()) >= 1
    # Said in words to a screen reader, the count shown in its name (axe found
    # label-content-name-mismatch with an aria-label that left out the number shown).
    assert page.get_by_role("button", name=re.compile(r"^Chats, \d+ unread notifications$"))
    found = axe_violations(page, ".chat-header")
    assert not found, describe(found)
    page.get_by_test_id("chats-toggle").click()
    page.get_by_test_id("notifications-open").click()
    item = entry(page, "Report ready")
    item.wait_for()
    dialog = page.get_by_test_id("notifications").bounding_box()
    assert dialog["width"] <= PHONE["width"] and dialog["height"] <= PHONE["height"]
    found = axe_violations(page, '[data-testid="notifications"]')
    assert not found, describe(found)
    item.get_by_test_id("notification-open").click()
    page.wait_for_function("id => location.hash === '#/chat/' + id", arg=other)
    page.locator(".app:not([data-drawer])").wait_for()  # the drawer closed: the chat shows
    assert page.get_by_test_id("message-input").is_visible()
