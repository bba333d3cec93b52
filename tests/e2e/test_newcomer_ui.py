"""What a newcomer meets in the page (issue 33, items 5 and 10), in Chromium on one server.

A chat whose model takes its time, sends two unusable replies and writes a file: the
status line says how long the step has taken, each reply that was not used shows why and
what the model sent, and the tool's card is titled in plain words. Settings: plain words,
menus whose text fits at desktop and phone sizes, and Escape asks before throwing away
edits. Each check joins a walk that shares its page, so the module costs one server.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import CHAT_NAME, open_page
from tests.support.agents import answer, reply
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import settings_kept
from tests.support.server_process import ServerProcess

ITEM = '[data-testid="log-item"]'
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def page(browser, request, shared_cadre: ServerProcess, llm) -> Iterator[object]:
    """A page on the module's server in which axe-core may run (bypass_csp)."""
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    with settings_kept(shared_cadre):
        yield from open_page(browser, request, shared_cadre.url, bypass_csp=True)


def test_a_slow_step_unusable_replies_and_a_tool_say_what_happens(page, llm):
    held = threading.Event()
    unknown = reply("teleport", where="mars")
    write = reply("text_editor:write", headline="Saving the notes", path="notes.txt",
                  content="Remember the milk.")  # fmt: skip
    llm.script(
        Reply("I think the answer is 42.", gate=held),
        Reply(unknown),
        Reply(write),
        Reply(answer("Saved the notes.")),
    )
    page.get_by_test_id("new-chat").click()
    page.get_by_test_id("message-input").fill("Note: remember the milk.")
    page.get_by_test_id("message-input").press("Enter")
    try:
        # A step that takes its time says for how long (the line looked stuck).
        took = page.get_by_test_id("status-time")
        took.filter(has_text=re.compile(r"^· [2-9] s$")).wait_for(timeout=30_000)
        assert "Reading the prompt…" in page.get_by_test_id("status-line").inner_text()
        assert took.get_attribute("aria-hidden") == "true"  # not read out every second
    finally:
        held.set()
    page.locator(f"{ITEM}[data-type='response']").filter(has_text="Saved the notes.").wait_for()

    # Each reply that was not used says why and keeps what the model sent, folded.
    rejected = page.locator(f"{ITEM}[data-type='agent'].is-unfinished")
    assert rejected.count() == 2
    first, second = rejected.nth(0), rejected.nth(1)
    assert first.locator(".li-title").inner_text() == "Reply not usable"
    assert "was not usable" in first.get_by_test_id("step-reason").inner_text()
    assert 'no tool named "teleport"' in second.get_by_test_id("step-reason").inner_text()
    fold = first.get_by_test_id("step-reply")
    assert fold.get_attribute("open") is None
    fold.locator("summary").click()
    assert first.get_by_test_id("step-reply-text").inner_text() == "I think the answer is 42."
    assert "mars" in second.get_by_test_id("step-reply-text").text_content()

    # A tool's card in plain words, its own name beside it.
    card = page.locator(f"{ITEM}[data-type='tool']").last
    assert card.locator(".li-title").inner_text() == "Writing a file"
    assert card.get_by_test_id("tool-name").inner_text() == "text_editor:write"
    found = axe_violations(page, '[data-testid="log"]')
    assert not found, describe(found)


#: [setting, the menu's text, whether it fits] of every menu of the settings form.
MENUS = """() => [...document.querySelectorAll('[data-testid="settings"] select')].map((menu) => {
    const text = menu.options[menu.selectedIndex]?.text || "";
    const pen = document.createElement("canvas").getContext("2d");
    pen.font = getComputedStyle(menu).font;
    // The text, the menu's padding and its arrow (about 24 px) within its width.
    return [menu.name, text, pen.measureText(text).width + 40 <= menu.clientWidth];
})"""


def test_settings_speak_plainly_fit_their_menus_and_ask_before_losing_edits(page):
    page.get_by_test_id("settings-open").click()
    dialog = page.get_by_test_id("settings")
    context_window = page.get_by_test_id("field-chat_ctx_length")
    context_window.wait_for()
    labels = dialog.locator("label").all_inner_texts()
    for word in ("Structured replies", "bubblewrap program", "History's share", "Model client"):
        assert not [label for label in labels if word in label], word
    assert "Keep replies to the agents' format" in labels
    assert page.get_by_test_id("unit-history_ratio").inner_text() == "of the window"
    for size in (None, PHONE):
        if size:
            page.set_viewport_size(size)
        cut = [menu for menu in page.evaluate(MENUS) if not menu[2]]
        assert cut == [], f"menus that cut their text at {size or 'desktop'} size: {cut}"
    page.emulate_media(color_scheme="dark")
    found = axe_violations(page, '[data-testid="settings"]')
    assert not found, describe(found)

    # Escape with a change made asks first; "Keep editing" keeps the change.
    before = context_window.input_value()
    context_window.fill("12345")
    page.keyboard.press("Escape")
    ask = page.get_by_test_id("dialog")
    ask.filter(has_text="Discard your changes?").wait_for()
    page.get_by_test_id("confirm-cancel").filter(has_text="Keep editing").click()
    assert dialog.is_visible() and context_window.input_value() == "12345"
    context_window.focus()
    page.keyboard.press("Escape")
    page.get_by_test_id("confirm-ok").filter(has_text="Discard").click()
    dialog.wait_for(state="hidden")
    page.get_by_test_id("chats-toggle").click()  # the phone's drawer holds Settings
    page.get_by_test_id("settings-open").click()
    context_window.wait_for()
    assert context_window.input_value() == before  # nothing was saved
    page.keyboard.press("Escape")  # nothing changed: closed at once
    dialog.wait_for(state="hidden")
    assert ask.is_hidden()
