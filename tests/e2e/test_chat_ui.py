"""The real UI in Chromium against a real run_ui.py and the fake model server.

One run_ui.py serves the module (tests/e2e/conftest.py `shared_cadre`); each test makes its own
chat in a fresh browser context. The last two walk what a newcomer meets (issue 33, items 5
and 10): a slow step says how long it has taken, each unusable reply why and what the model
sent, a tool's card is titled in plain words; Settings speak plainly, fit their menus at
desktop and phone sizes and ask before Escape throws edits away.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import CHAT_NAME, open_page
from tests.support.agents import answer, reply
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import settings_kept, warm_up
from tests.support.server_process import ServerProcess

RESPONSE = '[data-testid="log-item"][data-type="response"]'
ITEM = '[data-testid="log-item"]'
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> ServerProcess:
    """One run_ui.py for the module (tests/e2e/conftest.py)."""
    return shared_cadre


@pytest.fixture
def page(shared_page):
    return shared_page


@pytest.fixture
def axe_page(browser, request, cadre: ServerProcess, llm) -> Iterator[object]:
    """As `page`, one in which axe-core may run (bypass_csp)."""
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    with settings_kept(cadre):
        yield from open_page(browser, request, cadre.url, bypass_csp=True)


def new_chat(page) -> str:
    """Make a chat with the New chat button; its id, once the page shows it open (on a
    shared server older chats are listed too, so the first one listed may be another)."""
    page.locator("html[data-routed]").wait_for(state="attached")
    before = page.evaluate("location.hash")
    page.get_by_test_id("new-chat").click()
    page.wait_for_function("h => location.hash !== h && location.hash.startsWith('#/chat/')",
                           arg=before)  # fmt: skip
    chat_id = page.evaluate("decodeURIComponent(location.hash.slice('#/chat/'.length))")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"][aria-current="true"]'
                 ).wait_for()  # fmt: skip
    page.get_by_test_id("message-input").wait_for()
    return chat_id


def send(page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")


def last_response(page):
    return page.locator(f'{RESPONSE} [data-testid="response-body"]').last


def test_send_and_watch_the_answer_stream(page, llm):
    final = "The answer is **42**, " + "and it arrives piece by piece. " * 8
    llm.script(Reply(answer(final), chunk_size=6, delay=0.04))
    new_chat(page)
    # Every text the answer's body shows is noted as the page draws it: a busy machine may
    # draw seldom, so looking now and then could miss the in-between states.
    page.evaluate(
        """() => {
            window.__seenBodies = [];
            new MutationObserver(() => {
                const el = [...document.querySelectorAll('[data-testid="response-body"]')].pop();
                if (el) window.__seenBodies.push(el.textContent);
            }).observe(document.body, {subtree: true, childList: true, characterData: true});
        }"""
    )
    send(page, "What is the answer?")
    page.locator('[data-testid="log-item"][data-type="user"]').filter(
        has_text="What is the answer?").wait_for()  # fmt: skip
    page.wait_for_function(
        "t => { const el = [...document.querySelectorAll('[data-testid=\"response-body\"]')].pop();"
        " return el && el.textContent.trim().endsWith(t); }",
        arg="piece by piece.",
    )
    seen = page.evaluate("window.__seenBodies")
    # Seen while it was still being written: some text, not all of it.
    partial = [text for text in seen if 5 < len(text.strip()) < len(final) - 40]
    assert partial, seen[-3:]
    assert last_response(page).locator("strong").inner_text() == "42"


def test_a_delegation_is_nested_and_labelled(page, llm):
    llm.script(
        Reply(
            reply(
                "call_subordinate",
                headline="Delegating research",
                message="Find X.",
                profile="researcher",
                reset=True,
            )
        ),  # fmt: skip
        Reply(answer("X is in Paris.")),
        Reply(answer("Found: X is in Paris.")),
    )
    new_chat(page)
    send(page, "Where is X?")
    page.locator(RESPONSE).filter(has_text="Found: X is in Paris.").wait_for()
    block = page.locator('[data-testid="log-item"][data-type="subagent"]').first
    assert "A1 · researcher" in block.inner_text()
    nested = block.locator('[data-testid="log-item"][data-type="response"][data-agentno="1"]')
    assert nested.inner_text().count("X is in Paris.") == 1
    tree = page.get_by_test_id("agent-tree")
    assert "researcher" in tree.inner_text().lower()


def test_an_intervention_during_a_stream_changes_the_outcome(page, llm):
    llm.script(
        Reply(answer("A long answer about dogs. " * 20), chunk_size=4, delay=0.05),
        Reply(answer("Cats it is.")),
    )
    new_chat(page)
    send(page, "Tell me about pets.")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"response-body\"]')]"
        ".some(el => el.textContent.includes('dogs'))"
    )
    send(page, "Only cats, please.")
    page.locator(RESPONSE).filter(has_text="Cats it is.").wait_for()
    assert page.locator('[data-testid="log-item"][data-type="user"]').count() == 2
    chat_calls = [r for r in llm.chat_requests() if r.body["model"] == "chat-model"]
    prompt = "\n".join(m["content"] for m in chat_calls[-1].messages)
    assert "Only cats, please." in prompt


def test_pause_resume_and_stop(page, llm):
    text = "Slowly, word by word, this answer comes. " * 10
    long = Reply(answer("a " * 200), chunk_size=2, delay=0.05)
    llm.script(Reply(answer(text), chunk_size=4, delay=0.05), long)
    new_chat(page)
    send(page, "Go slowly.")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"response-body\"]')]"
        ".some(el => el.textContent.length > 10)"
    )
    page.get_by_test_id("pause").click()
    page.get_by_test_id("resume").wait_for(state="visible")
    page.wait_for_timeout(300)
    frozen = last_response(page).inner_text()
    page.wait_for_timeout(700)
    assert last_response(page).inner_text() == frozen
    page.get_by_test_id("resume").click()
    page.wait_for_function(
        "t => [...document.querySelectorAll('[data-testid=\"response-body\"]')]"
        ".some(el => el.textContent.trim().endsWith(t))",
        arg="this answer comes.",
    )
    send(page, "Now something long.")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"response-body\"]').length >= 2"
    )
    page.get_by_test_id("stop").click()
    page.locator('[data-testid="log-item"][data-type="info"]').filter(has_text="Stopped").wait_for()


def test_reload_and_server_restart_keep_the_log(page, llm, cadre):
    llm.script(Reply(answer("Remember me.")))
    chat_id = new_chat(page)
    send(page, "Hello.")
    page.locator(RESPONSE).filter(has_text="Remember me.").wait_for()
    # The chat is named after its first exchange (by the utility model, which `page` set
    # to answer CHAT_NAME): wait, so the log is complete.
    page.get_by_test_id("chat-title").filter(has_text=CHAT_NAME).wait_for()
    count = page.locator('[data-testid="log-item"]').count()
    page.reload()
    page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"]').click()
    page.locator(RESPONSE).filter(has_text="Remember me.").wait_for()
    assert page.locator('[data-testid="log-item"]').count() == count
    cadre.restart()
    page.reload()
    page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"]').click()
    page.locator(RESPONSE).filter(has_text="Remember me.").wait_for()
    assert page.locator('[data-testid="log-item"]').count() == count
    warm_up(cadre, llm)  # the restarted server is the module's: its next test finds it warm


def test_a_settings_change_persists(page, cadre):
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("profile-select").select_option("researcher")
    page.get_by_test_id("field-chat_ctx_length").fill("64000")
    page.get_by_test_id("settings-save").click()
    page.get_by_test_id("settings-save").wait_for(state="hidden")
    stored = json.loads((cadre.usr_dir / "settings.json").read_text())
    assert stored["agent_profile"] == "researcher" and stored["chat_ctx_length"] == 64000
    page.reload()
    page.get_by_test_id("settings-open").click()
    assert page.get_by_test_id("profile-select").input_value() == "researcher"
    assert page.get_by_test_id("field-chat_ctx_length").input_value() == "64000"


#: A 1×1 PNG: an inline image, which the page may show as it is.
DOT = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
#: Images that would tell another site the page was read: none may load.
REMOTE_IMAGES = (
    "![a](http://remote.example/a.png) ![b](https://remote.example/b.png) "
    "![c](//remote.example/c.png) "
    '<img src="https://remote.example/d.png" srcset="http://remote.example/e.png 2x">'
)


def test_hostile_html_from_the_model_renders_inert(page, llm):
    hostile = (
        'Look: <img src=x onerror="window.__pwned=1"> and '
        "<script>window.__pwned2=1</script> and [link](javascript:window.__pwned3=1)"
        f"\n\n{REMOTE_IMAGES} ![dot]({DOT})"
    )
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    llm.script(Reply(answer(hostile)))
    new_chat(page)
    send(page, "<b onmouseover=alert(1)>hi</b>")
    page.locator(RESPONSE).filter(has_text="Look:").wait_for()
    body = last_response(page)
    assert body.locator("script").count() == 0
    assert body.locator("[onerror]").count() == 0
    for link in body.locator("a").all():
        assert not (link.get_attribute("href") or "").lower().startswith("javascript")
    body.locator("a").first.click() if body.locator("a").count() else None
    page.wait_for_timeout(300)
    assert page.evaluate("() => [window.__pwned, window.__pwned2, window.__pwned3]") == [
        None, None, None]  # fmt: skip
    user = page.locator('[data-testid="log-item"][data-type="user"]').last
    assert user.locator("b").count() == 0 and "<b onmouseover" in user.inner_text()
    images = page.locator('[data-testid="log-item"] img').evaluate_all(
        "imgs => imgs.map(i => [i.getAttribute('src'), i.getAttribute('srcset')])"
    )
    assert len(images) == 6  # x, the four remote ones, the dot
    # Only inline images keep a source: none is remote (http, https, //host), none relative.
    remote = [i for i in images if any(v and not v.startswith("data:") for v in i)]
    assert remote == [], "an image with a remote src is left in the log"
    assert images[-1] == [DOT, None]  # the inline image keeps its own src
    assert not [url for url in requested if "remote.example" in url]


def test_a_slow_step_unusable_replies_and_a_tool_say_what_happens(axe_page, llm):
    page = axe_page
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


def test_settings_speak_plainly_fit_their_menus_and_ask_before_losing_edits(axe_page):
    page = axe_page
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


def test_a_preset_made_in_settings_runs_the_chat_that_chose_it_in_its_header(axe_page, llm):
    page = axe_page
    # Settings › Model presets: one made with the editor (its address and key: the Model
    # settings', the same provider's).
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("preset-add").click()
    made = page.get_by_test_id("preset").last
    made.get_by_label("Name").fill("Fast")
    made.get_by_label("Chat model").fill("openai/fast-model")
    found = axe_violations(page, '[data-testid="settings"]')
    assert not found, describe(found)
    page.get_by_test_id("settings-save").click()
    page.get_by_test_id("settings").wait_for(state="hidden")
    new_chat(page)
    picker = page.locator(".chat-header").get_by_label("Model", exact=True)
    picker.wait_for()
    labels = picker.locator("option").all_inner_texts()
    assert labels == ["Default (openai/chat-model)", "Fast (openai/fast-model)",
                      "openai/chat-model", "openai/fast-model"]  # fmt: skip
    models = picker.locator('optgroup[label="Models"] option').all_inner_texts()
    assert models == ["openai/chat-model", "openai/fast-model"]
    picker.select_option("Fast")
    llm.add_rule(model_is("fast-model"), Reply(answer("Fast here.")))
    # The server's answer: the chat's state says what it chose.
    page.locator('[data-testid="chat-model"][data-chosen="Fast"]').wait_for(state="attached")
    send(page, "Who answers?")
    page.locator(RESPONSE).filter(has_text="Fast here.").wait_for()
    assert len(llm.chat_requests("fast-model")) == 1 and not llm.chat_requests("chat-model")
    page.reload()  # the choice is the chat's, on the server
    page.set_viewport_size(PHONE)
    page.locator('[data-testid="chat-model"][data-chosen="Fast"]').wait_for()
    assert page.get_by_test_id("chat-model").input_value() == "Fast"
    box = page.get_by_test_id("chat-model").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    found = axe_violations(page, ".chat-header")
    assert not found, describe(found)
    # A model by its name, from the Models group: the settings' chat model, for this chat.
    picker.select_option(label="openai/chat-model")
    chosen = '[data-testid="chat-model"][data-chosen="model:openai/chat-model"]'
    page.locator(chosen).wait_for(state="attached")
    llm.add_rule(model_is("chat-model"), Reply(answer("The settings' model here.")))
    send(page, "And now?")
    page.locator(RESPONSE).filter(has_text="The settings' model here.").wait_for()
    assert len(llm.chat_requests("chat-model")) == 1
    page.reload()
    page.locator(chosen).wait_for()


def test_replay_from_the_chat_header_follows_the_record(axe_page, llm, cadre):
    """Replay… in the header: the two choices in words, a new chat that replays the record
    with no model call, its name and its outcome said in its log."""
    page = axe_page
    llm.script(Reply(reply("code_execution_tool", runtime="terminal", code="echo replayed")),
               Reply(answer("Echoed it.")))  # fmt: skip
    source = new_chat(page)
    send(page, "Echo something")
    last_response(page).filter(has_text="Echoed it.").wait_for()
    page.get_by_test_id("chat-title").filter(has_text=CHAT_NAME).wait_for()  # named: no call left
    asked = len(llm.requests)
    page.get_by_test_id("chat-replay").click()
    dialog = page.get_by_test_id("replay-dialog")
    assert dialog.get_by_role("radio", name="Run them again, and show where a result differs"
                              ).is_checked()  # fmt: skip
    assert dialog.get_by_role("radio", name="Stop there").is_checked()
    dialog.get_by_role("radio", name="Use their recorded results (nothing runs)").wait_for()
    dialog.get_by_role("radio", name="Go on with the model (spends tokens)").wait_for()
    page.screenshot(path=str(cadre.usr_dir.parent / "replay-dialog.png"))
    found = axe_violations(page, '[data-testid="replay-dialog"]')
    assert not found, describe(found)
    page.get_by_test_id("replay-start").click()
    page.wait_for_function("id => !location.hash.endsWith(id)", arg=source)
    ended = page.locator(f'{ITEM}[data-type="info"]').filter(has_text="followed the record")
    ended.wait_for()
    assert page.get_by_test_id("chat-title").inner_text() == f"Replay of {CHAT_NAME}"
    assert last_response(page).inner_text() == "Echoed it."
    assert len(llm.requests) == asked  # the record answered every call
    page.set_viewport_size(PHONE)
    page.get_by_test_id("chat-replay").click()
    page.screenshot(path=str(cadre.usr_dir.parent / "replay-phone.png"))
    page.get_by_test_id("replay-cancel").click()
    assert page.get_by_test_id("replay-dialog").is_hidden()
