"""Habits in Chromium: an address per chat, Edit and Resend, Up-arrow recall, chat search.

One run_ui.py serves every test of this module (its own usr/ folder); each test
opens its own browser context and makes its own chats, so the order of tests
does not matter.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import open_page
from tests.support.agents import answer
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.server_process import ServerProcess

USER = '[data-testid="log-item"][data-type="user"]'
RESPONSE = '[data-testid="log-item"][data-type="response"]'


@pytest.fixture(scope="module")
def shared(_fake_llm_server: FakeLLMServer, tmp_path_factory) -> Iterator[ServerProcess]:
    """run_ui.py for the whole module, on the session's fake model server."""
    folder = tmp_path_factory.mktemp("habits")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    env.pop("PYTEST_CURRENT_TEST", None)
    env["CADRE_USR_DIR"] = str(folder / "usr")
    (folder / "usr").mkdir()
    for prefix in ("CHAT", "UTIL", "EMBED"):
        env[f"CADRE_{prefix}_MODEL"] = f"openai/{prefix.lower()}-model"
        env[f"CADRE_{prefix}_API_BASE"] = _fake_llm_server.base_url
        env[f"CADRE_{prefix}_API_KEY"] = "test-key"
    server = ServerProcess(env, folder / "server.log").start()
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, shared: ServerProcess, llm: FakeLLMServer) -> Iterator[object]:
    llm.add_rule(model_is("util-model"), Reply("A chat"))  # naming, memory: a short answer
    yield from open_page(browser, request, shared.url)


def new_chat(page) -> str:
    """Make a chat with the New chat button; its id, once the page shows it open."""
    page.locator("html[data-routed]").wait_for(state="attached")  # the first chat is open
    before = page.evaluate("location.hash")
    page.get_by_test_id("new-chat").click()
    page.wait_for_function("h => location.hash !== h && location.hash.startsWith('#/chat/')",
                           arg=before)  # fmt: skip
    return open_chat(page)


def open_chat(page) -> str:
    """The id of the chat the address names (checked to be the one the list marks open)."""
    chat_id = page.evaluate("decodeURIComponent(location.hash.slice('#/chat/'.length))")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"][aria-current="true"]'
                 ).wait_for()  # fmt: skip
    return chat_id


def send(page, text: str, reply_text: str, llm: FakeLLMServer) -> None:
    llm.script(Reply(answer(reply_text)))
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("message-input").press("Enter")
    # Generous: the server's first model call imports litellm, slow on a busy machine.
    page.locator(RESPONSE).filter(has_text=reply_text).wait_for(timeout=90_000)


def test_reload_back_forward_new_and_delete_keep_the_address(page, llm):
    first = new_chat(page)
    send(page, "Hello from the first chat", "First chat answer.", llm)
    second = new_chat(page)  # the newest chat from now on
    assert second != first
    page.locator(f'[data-testid="chat-item"][data-chat-id="{first}"]').click()
    assert open_chat(page) == first
    page.reload()
    assert open_chat(page) == first  # the chat you were on, not the newest
    page.locator(RESPONSE).filter(has_text="First chat answer.").wait_for()
    page.go_back()
    assert open_chat(page) == second
    page.go_forward()
    assert open_chat(page) == first
    page.locator(RESPONSE).filter(has_text="First chat answer.").wait_for()
    # Enter in the delete question cancels (its focus is on Cancel): nothing is lost.
    page.get_by_test_id("chat-delete").click()
    expect(page.get_by_test_id("confirm-cancel")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("dialog")).to_be_hidden()
    assert open_chat(page) == first
    # Deleting the open chat moves the address to the chat now shown.
    page.get_by_test_id("chat-delete").click()
    page.get_by_test_id("confirm-ok").click()
    page.wait_for_function("id => !location.hash.endsWith(id)", arg=first)
    assert open_chat(page) == second


def test_a_link_to_an_unknown_chat_says_so_and_opens_the_newest(page, shared):
    newest = new_chat(page)
    page.goto(f"{shared.url}/#/chat/no-such-chat")
    page.get_by_test_id("toast").filter(has_text="Chat not found").wait_for()
    assert open_chat(page) == newest


def test_edit_and_resend_the_last_message(page, llm):
    new_chat(page)
    send(page, "Tell me about cats", "Cats purr.", llm)
    messages = page.locator(USER)
    assert messages.count() == 1
    page.get_by_test_id("message-edit").click()
    editor = page.get_by_test_id("message-edit-input")
    assert editor.input_value() == "Tell me about cats"
    editor.fill("Tell me about dogs")
    llm.script(Reply(answer("Dogs bark."), chunk_size=4, delay=0.05))
    # The chat model's requests only: the utility model's (naming the chat once the first
    # run is saved) can come in between, at any moment.
    requests = len(llm.chat_requests("chat-model"))
    page.get_by_test_id("message-save").click()
    page.locator(RESPONSE).filter(has_text="Dogs bark.").wait_for()
    # The model got the new text, not the old one; the log shows only the new run.
    sent = llm.chat_requests("chat-model")[requests].text
    assert "Tell me about dogs" in sent and "cats" not in sent and "Cats purr." not in sent
    assert messages.count() == 1 and messages.first.inner_text().count("Tell me about dogs") == 1
    assert page.locator(RESPONSE).filter(has_text="Cats purr.").count() == 0

    page.get_by_test_id("message-resend").click()
    llm.script(Reply(answer("Dogs are loyal.")))
    page.locator(RESPONSE).filter(has_text="Dogs are loyal.").wait_for()
    sent = llm.chat_requests("chat-model")[-1].text
    assert sent.count("Tell me about dogs") == 1 and "Dogs bark." not in sent
    assert messages.count() == 1
    assert page.locator(RESPONSE).count() == 1


def test_up_arrow_recalls_the_last_message_only_from_an_empty_box(page, llm):
    new_chat(page)
    send(page, "Remember this line", "Noted.", llm)
    box = page.get_by_test_id("message-input")
    box.focus()
    box.press("ArrowUp")
    assert box.input_value() == "Remember this line"
    box.press("ArrowDown")
    assert box.input_value() == ""
    # Text of your own is never replaced: Up moves the caret within it.
    box.fill("first line\nsecond line")
    box.press("ArrowUp")
    assert box.input_value() == "first line\nsecond line"
    assert page.evaluate("document.activeElement.selectionStart") < len("first line\n")


def test_the_chat_list_search_filters_by_name_and_by_text(page, llm):
    trip = new_chat(page)
    send(page, "Plan a visit to the aquarium", "Go on a Tuesday.", llm)
    page.get_by_test_id("chat-rename").click()
    page.get_by_test_id("dialog-input").fill("Weekend trip")
    page.get_by_test_id("confirm-ok").click()
    page.get_by_test_id("chat-title").filter(has_text="Weekend trip").wait_for()
    other = new_chat(page)
    search = page.get_by_test_id("chat-search")

    search.fill("weekend")
    row = page.locator(f'[data-testid="chat-item"][data-chat-id="{trip}"]')
    row.wait_for(state="visible")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{other}"]').wait_for(state="hidden")
    assert row.get_by_test_id("chat-item-snippet").is_hidden()  # the name says it
    search.fill("AQUARIUM")  # in what was said, not in the name: the server finds it
    row.wait_for(state="visible")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{other}"]').wait_for(state="hidden")
    # The words it was found in show under the name, the text marked.
    snippet = row.get_by_test_id("chat-item-snippet")
    snippet.filter(has_text="Plan a visit to the aquarium").wait_for()
    assert snippet.locator("mark").inner_text() == "aquarium"
    search.fill("zebra crossing")
    page.get_by_test_id("chat-search-empty").wait_for()
    assert page.get_by_test_id("chat-search-empty").inner_text() == "No chats match."
    search.press("Escape")
    assert search.input_value() == ""
    page.locator(f'[data-testid="chat-item"][data-chat-id="{other}"]').wait_for(state="visible")
    assert page.get_by_test_id("chat-search-empty").is_hidden()


def test_the_context_variables_editor_on_a_phone(browser, request, shared, llm):
    """Add, refuse a bad name in words, fix, remove, save; reopened, the chat holds them;
    axe finds nothing serious in the dialog."""
    pages = open_page(
        browser, request, shared.url, viewport={"width": 390, "height": 844}, bypass_csp=True
    )  # fmt: skip (axe is added as a script)
    page = next(pages)
    try:
        page.locator("html[data-routed]").wait_for(state="attached")
        before = page.evaluate("location.hash")
        page.get_by_test_id("chats-toggle").click()  # a phone: the chat list is a drawer
        page.get_by_test_id("new-chat").click()  # (which closes once the chat is open)
        page.wait_for_function("h => location.hash !== h", arg=before)
        page.get_by_test_id("chat-variables").click()
        dialog = page.get_by_test_id("variables")
        expect(dialog.get_by_test_id("variables-empty")).to_be_visible()
        page.get_by_test_id("variable-add").click()
        expect(dialog.get_by_label("Name")).to_be_focused()  # other dialogs have a Name too
        # Visible words say which field is which (not only their aria-labels).
        expect(dialog.get_by_placeholder("Name, e.g. client")).to_be_visible()
        expect(dialog.get_by_placeholder("Value: any text")).to_be_visible()
        dialog.get_by_label("Name").fill("1st customer")
        dialog.get_by_label("Value of 1st customer").fill("ACME")
        page.get_by_test_id("variables-save").click()
        expect(dialog.get_by_role("alert")).to_have_text(
            "“1st customer” cannot be a name: use letters, digits and _, not starting with "
            "a digit, at most 64 characters."
        )
        expect(dialog.get_by_label("Name")).to_be_focused()
        expect(dialog.get_by_label("Name")).to_have_attribute("aria-invalid", "true")

        dialog.get_by_label("Name").fill("customer")
        page.get_by_test_id("variable-add").click()
        page.get_by_test_id("variable-name").nth(1).fill("tier")
        dialog.get_by_label("Value of tier").fill("gold")
        violations = axe_violations(page, '[data-testid="variables"]')
        assert not violations, describe(violations)
        page.get_by_role("button", name="Remove tier").click()
        page.get_by_test_id("variables-save").click()
        # It closes once the chat has saved them: a loaded machine took more than the
        # default 5 s once (the dialog still open, no error shown).
        expect(dialog).to_be_hidden(timeout=20_000)

        page.get_by_test_id("chat-variables").click()
        # Open first: the closed dialog still holds the rows it was saved with, so they
        # passed before it opened once, and the Escape came before it (seen in a full run).
        expect(dialog).to_be_visible()
        expect(page.get_by_test_id("variable-row")).to_have_count(1)
        expect(dialog.get_by_label("Name")).to_have_value("customer")
        expect(dialog.get_by_label("Value of customer")).to_have_value("ACME")
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
    finally:
        next(pages, None)


def test_typing_elsewhere_while_a_new_chat_opens_keeps_the_focus_there(page):
    """A new chat puts the cursor in the message box once it is open; a person who has
    moved on meanwhile (to the search box) keeps typing there (a full run once typed a
    search into the message box: the chat's opening ended between two key presses)."""
    held: list[str] = []
    sockets: list[object] = []
    holding = False

    def route(ws) -> None:
        server = ws.connect_to_server()
        asked: set[str] = set()
        sockets.append(ws)

        def up(message) -> None:  # the page's subscription to the new chat: its id noted
            if holding and isinstance(message, str) and '["chat:subscribe"' in message:
                asked.add(message[2 : message.index("[")])
            server.send(message)

        def down(message) -> None:  # and its answer held until the test lets it through
            if isinstance(message, str) and message.startswith("43"):
                if message[2 : message.index("[")] in asked:
                    held.append(message)
                    return
            ws.send(message)

        ws.on_message(up)
        server.on_message(down)

    page.route_web_socket("**/socket.io/**", route)
    page.reload()
    page.locator("html[data-routed]").wait_for(state="attached")
    holding = True  # from the new chat on (the page opened one already)
    before = page.evaluate("location.hash")
    page.get_by_test_id("new-chat").click()
    page.wait_for_function("h => location.hash !== h", arg=before)
    search = page.get_by_test_id("chat-search")
    search.click()
    search.press_sequentially("week")
    for _ in range(200):  # its answer may still be on its way: the page's socket is served
        if held:  # while Playwright waits, never while the test sleeps
            break
        page.wait_for_timeout(50)
    assert held, "the new chat's opening was not held"
    for message in held:
        sockets[-1].send(message)
    page.wait_for_timeout(300)  # the opening's end (a focus would be at once) before more keys
    assert page.evaluate("document.activeElement.dataset.testid") == "chat-search"
    page.keyboard.type("end")  # where the focus is, as a person's keys go
    assert search.input_value() == "weekend"
    assert page.get_by_test_id("message-input").input_value() == ""
