"""Parallel subordinates in the real UI: siblings streaming at once, the tree, an intervention.

One run_ui.py for the module (on the session's fake model server); each
sibling's replies are routed by its task, as concurrent requests come in any order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import open_page
from tests.integration.test_parallel_subordinates import TASKS, delegate_all, task_is
from tests.support.agents import answer
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.server_process import ServerProcess

ITEM = '[data-testid="log-item"]'
RESPONSE = f'{ITEM}[data-type="response"]'


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> ServerProcess:
    """The test process's shared run_ui.py (tests/e2e/conftest.py)."""
    return shared_cadre


@pytest.fixture
def page(browser, request, cadre, _fake_llm_server: FakeLLMServer) -> Iterator[object]:
    _fake_llm_server.reset()
    _fake_llm_server.add_rule(model_is("util-model"), Reply("Three lists"))
    yield from open_page(browser, request, cadre.url)


def test_siblings_stream_side_by_side_and_one_selected_gets_a_message(page, _fake_llm_server):
    llm = _fake_llm_server
    held, final = threading.Event(), threading.Event()
    words = "word " * 80  # about four seconds at 4 characters every 50 ms
    llm.add_rule(task_is("Task ONE"), Reply(answer(f"Fruits: {words}"), chunk_size=4, delay=0.05))
    llm.add_rule(task_is("Task TWO"), Reply(answer("held"), gate=held), times=1)
    llm.add_rule(task_is("Task TWO"), Reply(answer("Evergreens: pine, spruce.")))
    llm.add_rule(task_is("Task THREE"), Reply(answer(f"Birds: {words}"), chunk_size=4, delay=0.05))
    # A2's task is a long prompt, its profile named by the accepted alias "agent_profile".
    long_two = TASKS[1] + " Name each tree's leaves, bark, height and where it grows, in a table."
    two = {"message": long_two, "agent_profile": "researcher"}
    llm.script(
        delegate_all(TASKS[0], two, TASKS[2]),
        Reply(answer("Here are the three lists."), gate=final),
    )
    try:
        page.get_by_test_id("new-chat").click()
        page.get_by_test_id("message-input").fill("Make three lists.")
        page.get_by_test_id("message-input").press("Enter")

        # Each sibling has a block of its own inside the call, and two stream at once:
        # both show part of their answer while neither has all of it yet.
        call = page.locator(f'{ITEM}[data-type="subagent"]').first
        call.wait_for(timeout=30_000)  # a fresh server imports the model client first
        # Named once the siblings start, a moment after the call's item shows.
        expect(call).to_contain_text("A1.1, A1.2, A1.3 at once")
        page.wait_for_function(
            """() => {
                const part = (name) => {
                    const block = document.querySelector(`[data-sibling="${name}"]`);
                    const body = block && block.querySelector('[data-testid="response-body"]');
                    return body ? body.textContent : "";
                };
                const one = part("A1.1"), three = part("A1.3");
                return one.includes("Fruits") && three.includes("Birds")
                    && one.split("word").length < 80 && three.split("word").length < 80;
            }"""
        )
        blocks = page.get_by_test_id("sibling-block")
        assert [blocks.nth(i).get_attribute("data-sibling") for i in range(3)] == [
            "A1.1", "A1.2", "A1.3"
        ]  # fmt: skip
        # Each block is headed with its profile (the checked one, named by either key) and
        # its task, kept short for a screen reader's list of headings: all of it on hover.
        heading = blocks.nth(1).locator(".sibling-name")
        assert heading.inner_text() == (
            "A1.2 · researcher · Task TWO: list the trees. Name each tree's leaves, bark,"
            " height and where it…"
        )
        assert heading.get_attribute("title") == long_two
        first = blocks.nth(0).locator(".sibling-name")
        assert first.inner_text() == "A1.1 · default · Task ONE: list the fruits."
        assert first.get_attribute("title") is None

        # The tree: the three siblings under Agent 0, working.
        tree = page.get_by_test_id("agent-tree")
        siblings = tree.locator(".tree-children > li > [data-testid='tree-agent']")
        page.wait_for_function(
            "() => document.querySelectorAll('[data-agent^=\"A1.\"][data-status]').length === 3"
        )
        assert [siblings.nth(i).get_attribute("data-agent") for i in range(3)] == [
            "A1.1", "A1.2", "A1.3"
        ]  # fmt: skip
        # Grouped as one team of Agent 0's (their names read like A1's children).
        team = tree.get_by_test_id("tree-team")
        assert team.locator(".tree-team-label").inner_text() == "3 at once, for A0"
        assert team.locator("[data-testid='tree-agent']").count() == 3
        second = tree.locator('[data-agent="A1.2"]')
        assert second.get_attribute("data-status") == "working"

        # Selected in the tree, A1.2 alone gets the message sent now.
        second.click()
        assert second.get_attribute("aria-pressed") == "true"
        box = page.get_by_test_id("message-input")
        assert "A1.2" in (box.get_attribute("placeholder") or "")
        box.fill("Only evergreen trees, please.")
        box.press("Enter")
        said = page.locator(f'{ITEM}[data-type="user"][data-agent="A1.2"]')
        said.filter(has_text="Only evergreen trees").wait_for()
        page.locator(RESPONSE).filter(has_text="Evergreens: pine, spruce.").wait_for()
        # Done, A1.2 no longer gets the messages, and the box says where they go now.
        page.wait_for_function(
            """() => document.querySelector('[data-testid="message-input"]').placeholder
                .startsWith("A1.2 is done: Agent 0 reads this")"""
        )
    finally:
        held.set()
        final.set()
    page.get_by_test_id("filter-clear").click()
    page.locator(RESPONSE).filter(has_text="Here are the three lists.").wait_for(timeout=30_000)
    # The long log is scrolled to its end; the bar kept at its top leaves no gap above it
    # for the scrolled text to show through.
    gap = page.get_by_test_id("log").evaluate(
        """log => log.scrollTop > 0 && log.querySelector('[data-testid="log-tools"]')
            .getBoundingClientRect().top - log.getBoundingClientRect().top"""
    )
    assert gap is not False and gap <= 1
    # The message is drawn in A1.2's block, where it went; the others never saw it.
    assert page.locator('[data-sibling="A1.2"]').get_by_text("Only evergreen trees").count() == 1
    asked = [r for r in llm.chat_requests() if "Only evergreen" in str(r.messages)]
    assert asked and all("Task TWO" in str(r.messages[1]) for r in asked)


def test_a_message_to_every_working_sibling_says_so_below_their_blocks(page, _fake_llm_server):
    llm = _fake_llm_server
    gates = {n: threading.Event() for n in ("ONE", "TWO", "THREE")}
    for n, gate in gates.items():
        llm.add_rule(task_is(f"Task {n}"), Reply(answer(f"{n} held"), gate=gate), times=1)
        llm.add_rule(task_is(f"Task {n}"), Reply(answer(f"{n} short.")))
    llm.script(delegate_all(*TASKS), Reply(answer("The short lists.")))
    try:
        page.get_by_test_id("new-chat").click()
        box = page.get_by_test_id("message-input")
        box.fill("Make three lists.")
        box.press("Enter")
        page.wait_for_function(
            '() => document.querySelectorAll(\'[data-agent^="A1."][data-status="working"]\')'
            ".length === 3",
            timeout=30_000,
        )
        # No agent selected: the box says the message goes to all three (the toggle: to
        # Agent 0 too), and its item says so once sent.
        assert "All 3 working agents (A1.1, A1.2 and A1.3) read this" in box.get_attribute(
            "placeholder"
        )
        page.get_by_test_id("broadcast-toggle").check()
        assert "Every agent in this run (Agent 0, A1.1, A1.2 and A1.3)" in box.get_attribute(
            "placeholder"
        )
        page.get_by_test_id("broadcast-toggle").uncheck()
        box.fill("Keep them short.")
        box.press("Enter")
        said = page.locator(f'{ITEM}[data-type="user"]').filter(has_text="Keep them short.")
        said.wait_for()
        assert said.get_by_test_id("user-to").inner_text() == "To A1.1, A1.2 and A1.3"
        # In none of their blocks, but below them, across the call's width.
        assert said.evaluate("el => el.closest('[data-sibling]') === null")
        # Measured at one instant: the blocks still grow as their agents write.
        top, lowest, width, across = said.evaluate(
            """el => {
                const blocks = [...document.querySelectorAll('[data-testid="sibling-block"]')];
                const lowest = Math.max(...blocks.map((b) => b.getBoundingClientRect().bottom));
                const box = el.getBoundingClientRect();
                return [box.top, lowest, box.width, el.parentElement.getBoundingClientRect().width];
            }"""
        )
        assert top >= lowest and width > across - 20, (top, lowest, width, across)
    finally:
        for gate in gates.values():
            gate.set()
    page.locator(RESPONSE).filter(has_text="The short lists.").wait_for(timeout=30_000)
    asked = [r for r in llm.chat_requests() if "Keep them short." in str(r.messages)]
    assert all(any(f"Task {n}" in str(r.messages[1]) for r in asked) for n in gates)
