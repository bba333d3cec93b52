"""The calmer log in Chromium: utility rows behind a switch, one card per answer,
interventions drawn in the block of the agent they went to, copy buttons and live
token estimates. The test process's shared run_ui.py serves the module (each test opens
its own chat in a fresh browser context)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.e2e.test_chat_ui import RESPONSE, new_chat, send
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is
from tests.support.server_process import ServerProcess

ITEM = '[data-testid="log-item"]'


@pytest.fixture(scope="module")
def shared(shared_cadre: ServerProcess) -> ServerProcess:
    """The test process's shared run_ui.py (tests/e2e/conftest.py), its first model call
    made: litellm's start-up, slow on a busy machine, is not paid inside a test's wait."""
    return shared_cadre


def pages(browser, request, shared, llm) -> Iterator[object]:
    # Every utility call (naming the chat) gets this reply, never a scripted chat reply.
    llm.add_rule(model_is("util-model"), Reply("Named by the utility model"))
    for page in open_page(browser, request, shared.url):
        # Generous: the machine is shared, and the server's first model call is slow.
        page.set_default_timeout(30_000)
        yield page


@pytest.fixture
def page(browser, request, shared, llm) -> Iterator[object]:
    yield from pages(browser, request, shared, llm)


@pytest.fixture
def clip_page(browser, request, shared, llm) -> Iterator[object]:
    """A page that may read and write the clipboard."""
    for page in pages(browser, request, shared, llm):
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=shared.url)
        yield page


def wait_named(page) -> None:
    """The chat is named after its first exchange: its utility row is in the log then."""
    page.get_by_test_id("chat-title").filter(has_text="Named by the utility model").wait_for()


def test_utility_rows_are_hidden_until_the_switch_shows_them(page, llm):
    llm.script(Reply(answer("Hello there.")))
    new_chat(page)
    send(page, "hello")
    page.locator(RESPONSE).filter(has_text="Hello there.").wait_for()
    wait_named(page)
    utility = page.locator(f'{ITEM}[data-type="util"]')
    assert utility.count() == 0
    switch = page.get_by_role("checkbox", name="Show utility steps")
    assert not switch.is_checked()
    switch.check()
    utility.filter(has_text="Naming the chat").wait_for()
    # Remembered: after a reload the switch is still on and the row still shown.
    page.reload()
    page.locator('[data-testid="chat-item"]').first.click()
    utility.filter(has_text="Naming the chat").wait_for()
    assert page.get_by_role("checkbox", name="Show utility steps").is_checked()
    page.get_by_role("checkbox", name="Show utility steps").uncheck()
    utility.first.wait_for(state="detached")


def test_an_answer_is_one_card_and_tool_steps_keep_their_rows(page, llm):
    llm.script(
        Reply(reply("wait", headline="Waiting a moment", seconds=0.01)),
        Reply(reply("response", headline="Greeting back", thoughts=["Be brief."], text="Hi!")),
    )
    new_chat(page)
    send(page, "hi")
    card = page.locator(RESPONSE).filter(has_text="Hi!")
    card.wait_for()
    wait_named(page)
    # The tool step is a row; the answer's step is no row of its own but part of the card.
    steps = page.locator(f'{ITEM}[data-type="agent"]')
    assert steps.count() == 1 and "Waiting a moment" in steps.inner_text()
    assert page.locator(RESPONSE).count() == 1
    assert "Greeting back" in card.locator(".li-head").inner_text()
    assert "Responding" not in card.inner_text()
    thoughts = card.locator("details.li-thoughts")
    assert not thoughts.evaluate("el => el.open")  # folded, shown on demand
    thoughts.locator("summary").click()
    assert "Be brief." in thoughts.inner_text()
    # The same when the chat is opened again (drawn from the whole log at once).
    page.reload()
    page.locator('[data-testid="chat-item"]').first.click()
    card.wait_for()
    assert steps.count() == 1 and page.locator(RESPONSE).count() == 1
    assert "Greeting back" in card.locator(".li-head").inner_text()


def test_an_intervention_to_a1_is_drawn_inside_its_block(page, llm):
    llm.script(
        Reply(reply("call_subordinate", message="Count slowly.", reset=True)),
        Reply(answer("one, " * 120), chunk_size=4, delay=0.05),
        Reply(answer("Stopped counting.")),
        Reply(answer("A1 stopped counting.")),
    )
    new_chat(page)
    send(page, "Count with a helper.")
    block = page.locator(f'{ITEM}[data-type="subagent"]').first
    block.locator(f'{RESPONSE}[data-agentno="1"]').filter(has_text="one,").wait_for()
    send(page, "Stop counting now.")
    page.locator(RESPONSE).filter(has_text="A1 stopped counting.").wait_for()
    inside = block.locator(f'{ITEM}[data-type="user"]').filter(has_text="Stop counting now.")
    assert inside.count() == 1
    # In its place in time: after what A1 wrote before it, before what A1 wrote after.
    order = block.locator(f"{ITEM}").evaluate_all(
        "els => els.map(e => e.dataset.type + ':' + e.textContent.slice(0, 400))"
    )
    user_at = next(i for i, t in enumerate(order) if t.startswith("user:"))
    assert any(t.startswith("response:") and "one," in t for t in order[:user_at])
    assert any("Stopped counting." in t for t in order[user_at + 1 :])


CODE = "def double(x):\n    return 2 * x\n"
ANSWER = f"Here it is:\n\n```python\n{CODE}```\n\nUse it **well**."


def test_copy_buttons_put_the_code_and_the_answer_on_the_clipboard(clip_page, llm):
    page = clip_page
    llm.script(Reply(answer(ANSWER)))
    new_chat(page)
    send(page, "Write a function.")
    card = page.locator(RESPONSE).filter(has_text="Use it")
    card.wait_for()
    code_copy = card.get_by_role("button", name="Copy code")
    # Keyboard: reach the button by focus and press Enter.
    code_copy.focus()
    page.keyboard.press("Enter")
    card.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("() => navigator.clipboard.readText()") == CODE.rstrip("\n")
    card.get_by_role("button", name="Copy answer").click()
    page.wait_for_function("t => navigator.clipboard.readText().then(c => c === t)", arg=ANSWER)


def test_copy_works_without_the_clipboard_api(page, llm):
    """On http at a LAN address the page is no secure context: no navigator.clipboard."""
    page.add_init_script(
        """
        Object.defineProperty(Navigator.prototype, "clipboard", {get: () => undefined});
        window.__copied = [];
        document.addEventListener("copy", () => window.__copied.push(
            String(document.getSelection()) || document.activeElement.value || ""));
        """
    )
    page.reload()
    llm.script(Reply(answer(ANSWER)))
    new_chat(page)
    send(page, "Write a function.")
    card = page.locator(RESPONSE).filter(has_text="Use it")
    card.wait_for()
    card.get_by_role("button", name="Copy code").click()
    card.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("() => window.__copied") == [CODE.rstrip("\n")]


A0_USAGE = '[data-testid="tree-agent"][data-agentno="0"] .tree-usage'


def test_a_streaming_agent_shows_a_live_token_estimate_then_the_real_count(page, llm):
    # First a reply whose bulk is a tool's arguments (not shown while written): the
    # estimate counts them too (it stayed at a few tokens until the call's end).
    bulky = reply("no_such_tool", headline="Writing a file", content="x = 1\n" * 500)
    llm.script(
        Reply(bulky, chunk_size=40, delay=0.03),
        Reply(answer("counting words slowly " * 40), chunk_size=6, delay=0.03),
    )
    new_chat(page)
    send(page, "Talk for a while.")
    page.wait_for_function(
        """sel => { const el = document.querySelector(sel);
                    const m = el && /^~([0-9]+) tok/.exec(el.textContent);
                    return m && Number(m[1]) >= 200; }""",
        arg=A0_USAGE,
    )
    # The tree is redrawn as numbers change: look the element up each time.
    page.wait_for_function(
        """sel => { const el = document.querySelector(sel);
                    return el && /^~[1-9][0-9.]*k? tok/.test(el.textContent)
                       && el.title.includes("estimate"); }""",
        arg=A0_USAGE,
    )
    page.locator(RESPONSE).filter(has_text="words slowly counting words slowly").wait_for()
    # Replaced by the real count once the call's usage is in: no "~", no estimate.
    page.wait_for_function(
        """sel => { const el = document.querySelector(sel);
                    return el && /^[1-9][0-9.]*k? tok/.test(el.textContent)
                       && !el.title.includes("estimate"); }""",
        arg=A0_USAGE,
    )
    assert "completion" in page.locator(A0_USAGE).get_attribute("title")
