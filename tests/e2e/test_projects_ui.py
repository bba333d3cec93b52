"""The Projects panel in Chromium: a newcomer makes a project, starts a chat in it, and the
model is told the project's instructions; the chat list shows it by project; a bad work
folder and deleting a project with chats are refused with the reason.

One server for the module, one walk through the panel.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import open_page
from tests.support.agents import answer
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server, warm_up
from tests.support.server_process import ServerProcess


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    server = live_server(tmp_path_factory.mktemp("projects-ui"), _fake_llm_server.base_url,
                         api_key="projects-ui")  # fmt: skip
    warm_up(server, _fake_llm_server)  # a chat of no project, named "Warm-up"
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url, bypass_csp=True)  # axe runs in the page


def project(page, name: str):
    return page.locator(f"[data-testid=project-item][data-name='{name}']")


def test_a_project_made_in_the_panel_holds_its_chats_and_instructions(
    page, cadre, _fake_llm_server, tmp_path
):
    llm = _fake_llm_server
    llm.reset()
    llm.add_rule(model_is("util-model"), Reply("Pirate talk"))
    usr = Path(cadre.env["CADRE_USR_DIR"])
    page.get_by_test_id("projects-open").click()
    page.get_by_test_id("project-new").click()
    page.get_by_test_id("project-name").fill("parser")
    page.get_by_test_id("project-description").fill("The parser rewrite")
    page.get_by_test_id("project-instructions").fill("Answer like a pirate.")
    page.get_by_test_id("project-work-named").check()
    page.get_by_test_id("project-work-dir").fill(str(tmp_path / "missing"))
    page.get_by_test_id("project-save").click()
    error = page.get_by_test_id("project-error")
    error.wait_for()
    assert "does not exist" in error.inner_text() and not (usr / "projects" / "parser").exists()
    page.get_by_test_id("project-work-own").check()
    page.locator("[data-testid=project-disabled] input[value=developer]").check()
    page.get_by_test_id("project-save").click()
    project(page, "parser").wait_for()
    # An edit keeps what it does not touch: the profile turned off stays off.
    project(page, "parser").get_by_test_id("project-edit").click()
    expect(page.locator("[data-testid=project-disabled] input[value=developer]")).to_be_checked()
    page.get_by_test_id("project-description").fill("The parser rewrite, in Rust")
    page.get_by_test_id("project-save").click()
    expect(project(page, "parser")).to_contain_text("in Rust")
    saved = json.loads((usr / "projects" / "parser" / "settings.json").read_text())
    assert saved["disabled_agents"] == ["developer"]
    assert project(page, "parser").get_by_test_id("project-chats").inner_text() == "0 chats"
    found = axe_violations(page, '[data-testid="projects"]')
    assert not found, f"axe on the projects panel:\n{describe(found)}"

    project(page, "parser").get_by_test_id("project-start").click()
    header = page.get_by_test_id("chat-project")
    header.wait_for()
    assert header.inner_text() == "Project: parser"
    assert page.get_by_test_id("chat-project-filter").input_value() == "parser"
    assert page.get_by_test_id("new-chat").inner_text() == "New chat in parser"
    llm.script(Reply(answer("Arr, done.")))
    page.get_by_test_id("message-input").fill("Hello")
    page.get_by_test_id("send").click()
    page.get_by_text("Arr, done.").wait_for()
    told = [
        r.messages[0]["content"] for r in llm.chat_requests() if r.body["model"] != "util-model"
    ]
    assert "Answer like a pirate." in told[-1] and "The parser rewrite, in Rust" in told[-1]

    shown = page.locator("[data-testid=chat-list] > li:not([hidden])")
    expect(shown).to_have_count(1)  # the list shows the project's chats
    page.get_by_test_id("chat-project-filter").select_option("-")  # No project
    expect(shown).to_have_text(["Warm-up"])
    page.get_by_test_id("chat-project-filter").select_option("")  # All chats
    expect(shown).to_have_count(2)
    tags = shown.get_by_test_id("chat-item-project")
    expect(tags.first).to_have_text("parser")  # the newest, with its project named

    page.get_by_test_id("projects-open").click()
    project(page, "parser").get_by_test_id("project-delete").click()
    page.get_by_test_id("confirm-ok").click()
    status = page.get_by_test_id("projects-status")
    page.wait_for_function("() => document.querySelector('[data-testid=projects-status]')"
                           ".textContent.includes('1 chat(s)')")  # fmt: skip
    assert "delete them first" in status.inner_text()
    assert (usr / "projects" / "parser" / "settings.json").is_file()
