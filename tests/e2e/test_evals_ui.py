"""The Evaluations panel in Chromium: a suite of usr/evals/ run against a profile with its
progress shown, the result as a table and a chart, a second run compared with the first
(one task worse), a run's chat opened; at desktop and phone width.

One server and one browser for the module; the model answers by rules (runs go two at a
time, so a queue's order would not hold).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import CHAT_NAME, open_page
from tests.support.agents import answer
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.fake_llm_script import last_user_contains
from tests.support.server_process import ServerProcess

SHOTS = Path("/tmp/shots-evals")
SHOTS.mkdir(exist_ok=True)
SUITE = """\
name: panel
description: Two questions.
tasks:
  - name: capital
    message: What is the capital of France?
    checks:
      - contains: paris
  - name: colour
    message: What colour is the sky on a clear day?
    checks:
      - contains: blue
"""


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> Iterator[ServerProcess]:
    """The test process's shared run_ui.py (tests/e2e/conftest.py), with this module's
    suite in its usr/evals/ meanwhile."""
    suite = shared_cadre.usr_dir / "evals" / "panel.yaml"
    suite.parent.mkdir(exist_ok=True)
    suite.write_text(SUITE)
    yield shared_cadre
    suite.unlink()


@pytest.fixture
def page(browser, request, cadre, llm) -> Iterator[object]:
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))  # chat naming, whenever it comes
    yield from open_page(browser, request, cadre.url, bypass_csp=True)  # axe runs in the page


def panel(page):
    return page.get_by_test_id("evals")


def run_suite(page, llm, capital: str) -> None:
    """Run the suite; the capital task's answer is held until the page has shown the other
    task done (live progress), then let go."""
    held = threading.Event()
    llm.add_rule(last_user_contains("capital of France"), Reply(answer(capital), gate=held))
    llm.add_rule(last_user_contains("colour is the sky"), Reply(answer("Blue.")))
    panel(page).get_by_label("Suite").select_option("panel")
    panel(page).get_by_label("Profile").select_option("default")
    page.get_by_test_id("eval-run").click()
    try:
        expect(page.get_by_test_id("eval-status")).to_contain_text("1 of 2 runs done")
        expect(page.get_by_test_id("eval-run")).to_be_disabled()
        expect(page.get_by_test_id("eval-stop")).to_be_visible()
        page.screenshot(path=str(SHOTS / f"evals-running-{capital.strip('.')}.png"))
    finally:
        held.set()
    expect(page.get_by_test_id("eval-status")).to_contain_text("Finished panel", timeout=30_000)


def row(page, task: str):
    return page.locator(f"[data-testid=eval-row][data-task='{task}']")


def test_the_panel_runs_a_suite_and_compares_two_results(page, cadre, llm):
    page.get_by_test_id("evals-open").click()
    expect(panel(page).get_by_label("Suite")).to_contain_text("panel (2 tasks)")
    expect(panel(page).get_by_label("Suite")).to_contain_text("basics (5 tasks, Cadre's own)")
    expect(page.get_by_test_id("eval-result")).to_have_text("No results yet: run a suite.")

    run_suite(page, llm, "Paris.")
    expect(page.get_by_test_id("eval-status")).to_have_text("Finished panel: passed 2 of 2.")
    expect(page.get_by_test_id("eval-progress")).to_have_attribute("value", "2")
    expect(row(page, "capital")).to_contain_text("1/1")
    chart = page.get_by_test_id("eval-chart")
    expect(chart).to_have_attribute("aria-label", "Pass rate per task. capital: 100%; colour: 100%")
    assert chart.locator("rect").count() == 2

    llm.reset()
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    run_suite(page, llm, "Lyon.")
    expect(page.get_by_test_id("eval-status")).to_have_text("Finished panel: passed 1 of 2.")
    first = panel(page).get_by_label("Compare with").locator("option").nth(2)
    panel(page).get_by_label("Compare with").select_option(first.get_attribute("value"))
    expect(row(page, "capital")).to_contain_text("worse")
    expect(row(page, "colour")).to_contain_text("same")
    expect(chart).to_have_attribute(
        "aria-label",
        "Pass rate per task. capital: 100% before, 0% now; colour: 100% before, 100% now",
    )
    assert chart.locator("rect").count() == 4
    found = axe_violations(page, '[data-testid="evals"]')
    assert not found, f"axe on the evaluations panel:\n{describe(found)}"
    page.get_by_test_id("eval-result").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "evals-1280.png"))

    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_test_id("eval-table").scroll_into_view_if_needed()
    width = page.evaluate("() => document.querySelector('[data-testid=evals]').scrollWidth")
    assert width <= 390
    page.screenshot(path=str(SHOTS / "evals-390.png"))
    page.set_viewport_size({"width": 1280, "height": 800})

    report = page.get_by_test_id("eval-report-link").get_attribute("href")
    served = page.request.get(f"{cadre.url}{report}")
    assert served.ok and "passed 1 of 2" in served.text()
    page.locator("details.eval-runs summary").click()
    link = page.get_by_test_id("eval-chat-link").first
    chat_id = link.get_attribute("href").removeprefix("#/chat/")
    link.click()
    expect(page.get_by_test_id("evals")).to_be_hidden()
    page.wait_for_url(f"**/#/chat/{chat_id}")
