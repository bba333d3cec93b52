"""The Scheduler panel in Chromium: make a task (a bad cron is refused with its reason),
edit it, run one now, see its answer and open its chat, disable it, delete it.

One server for the module; the test walks the panel the way a newcomer would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import CHAT_NAME, open_page
from tests.support.agents import answer
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    server = live_server(tmp_path_factory.mktemp("scheduler-ui"), _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre, llm) -> Iterator[object]:
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))  # chat naming, whenever it comes
    yield from open_page(browser, request, cadre.url, bypass_csp=True)  # axe runs in the page


def task(page, name: str):
    return page.get_by_test_id("task-item").filter(has_text=name)


def test_the_scheduler_panel_makes_runs_and_shows_a_task(page, cadre, llm):
    usr = Path(cadre.env["CADRE_USR_DIR"])
    token = page.request.get(f"{cadre.url}/api/csrf").json()["token"]
    made = page.request.post(f"{cadre.url}/api/projects", data={"name": "reports"},
                             headers={"X-CSRF-Token": token})  # fmt: skip
    assert made.ok, made.text()
    page.get_by_test_id("scheduler-open").click()
    expect(page.get_by_test_id("scheduler-status")).to_have_text(
        "No tasks yet. Press New task to make one."
    )

    page.get_by_test_id("task-new").click()
    panel = page.get_by_test_id("scheduler")  # other dialogs have a Name field too
    panel.get_by_label("Name").fill("Morning check")
    page.get_by_label("Prompt for Agent 0").fill("Is the build green?")
    page.get_by_label("Cron expression").fill("0 9 * *")
    page.get_by_label("Time zone").fill("Europe/Paris")
    page.get_by_test_id("task-save").click()
    expect(page.get_by_test_id("task-error")).to_contain_text("has 4 field(s)")
    found = axe_violations(page, '[data-testid="scheduler"]')
    assert not found, f"axe on the scheduler panel:\n{describe(found)}"
    page.get_by_label("Cron expression").fill("0 9 * * 1-5")
    page.get_by_test_id("task-save").click()
    expect(task(page, "Morning check").get_by_test_id("task-state")).to_contain_text("Next run:")
    saved = json.loads((usr / "scheduler" / "tasks.json").read_text())["tasks"]
    assert [(t["cron"], t["timezone"]) for t in saved] == [("0 9 * * 1-5", "Europe/Paris")]

    task(page, "Morning check").get_by_test_id("task-edit").click()  # the form holds the task
    expect(page.get_by_test_id("task-form-title")).to_have_text("Edit “Morning check”")
    expect(page.get_by_label("Cron expression")).to_have_value("0 9 * * 1-5")
    page.get_by_label("Cron expression").fill("30 8 * * 1-5")
    page.get_by_test_id("task-save").click()
    expect(task(page, "Morning check")).to_contain_text("cron 30 8 * * 1-5 (Europe/Paris)")
    saved = json.loads((usr / "scheduler" / "tasks.json").read_text())["tasks"]
    assert [(t["name"], t["cron"]) for t in saved] == [("Morning check", "30 8 * * 1-5")]

    page.get_by_test_id("task-new").click()
    panel.get_by_label("Name").fill("Say hello")
    page.get_by_label("When").select_option("adhoc")
    expect(page.get_by_label("Cron expression")).to_be_hidden()
    page.get_by_label("Prompt for Agent 0").fill("Say hello to the team.")
    # The project is picked from the projects there are (it was a box to type a name in).
    projects = page.get_by_test_id("task-project").locator("option")
    expect(projects).to_have_text(["No project", "reports"])
    page.get_by_test_id("task-project").select_option("reports")
    page.get_by_test_id("task-save").click()
    hello = task(page, "Say hello")
    expect(hello.get_by_test_id("task-state")).to_have_text("No run planned")
    saved = json.loads((usr / "scheduler" / "tasks.json").read_text())["tasks"]
    assert [t["project"] for t in saved if t["name"] == "Say hello"] == ["reports"]

    llm.script(Reply(answer("Hello, team!")))
    hello.get_by_test_id("task-run").click()
    result = hello.get_by_test_id("task-result")
    hello.get_by_text("answered").click(timeout=30_000)  # the panel asks again every few s
    expect(result).to_have_text("Hello, team!")

    morning = task(page, "Morning check")
    morning.get_by_test_id("task-toggle").uncheck()
    expect(morning.get_by_test_id("task-state")).to_have_text("Disabled")
    morning.get_by_test_id("task-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(morning).to_have_count(0)

    hello.get_by_test_id("task-chat-open").click()
    expect(page.get_by_test_id("scheduler")).to_be_hidden()
    expect(page.get_by_test_id("log")).to_contain_text("Say hello to the team.")
    expect(page.get_by_test_id("log")).to_contain_text("Hello, team!")
