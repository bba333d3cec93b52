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


#: A long name: the sidebar's "New chat in <name>" must leave Import in view.
NAME = "the-parser-rewrite-of-2026"


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
    # A name left out, then one refused: said next to the field, which is marked.
    page.get_by_test_id("project-save").click()
    name_error = page.get_by_test_id("project-name-error")
    name_error.filter(has_text="Give the project a name.").wait_for()
    name_field = page.get_by_test_id("project-name")
    assert name_field.get_attribute("aria-invalid") == "true"
    assert "project-name-error" in name_field.get_attribute("aria-describedby")
    assert name_field.evaluate("el => el === document.activeElement")
    name_field.fill("no spaces, please")
    page.get_by_test_id("project-save").click()
    name_error.filter(has_text="invalid project name").wait_for()
    assert page.get_by_test_id("project-error").is_hidden()
    page.get_by_test_id("project-name").fill(NAME)
    page.get_by_test_id("project-description").fill("The parser rewrite")
    page.get_by_test_id("project-instructions").fill("Answer like a pirate.")
    page.get_by_test_id("project-work-named").check()
    page.get_by_test_id("project-work-dir").fill(str(tmp_path / "missing"))
    page.get_by_test_id("project-save").click()
    error = page.get_by_test_id("project-work-error")
    error.wait_for()
    assert "does not exist" in error.inner_text() and not (usr / "projects" / NAME).exists()
    assert name_error.is_hidden() and name_field.get_attribute("aria-invalid") is None
    assert page.get_by_test_id("project-work-dir").get_attribute("aria-invalid") == "true"
    page.get_by_test_id("project-work-own").check()
    page.locator("[data-testid=project-disabled] input[value=developer]").check()
    page.get_by_test_id("project-save").click()
    project(page, NAME).wait_for()
    # An edit keeps what it does not touch: the profile turned off stays off.
    project(page, NAME).get_by_test_id("project-edit").click()
    expect(page.locator("[data-testid=project-disabled] input[value=developer]")).to_be_checked()
    page.get_by_test_id("project-description").fill("The parser rewrite, in Rust")
    page.get_by_test_id("project-save").click()
    expect(project(page, NAME)).to_contain_text("in Rust")
    saved = json.loads((usr / "projects" / NAME / "settings.json").read_text())
    assert saved["disabled_agents"] == ["developer"]
    assert project(page, NAME).get_by_test_id("project-chats").inner_text() == "0 chats"
    found = axe_violations(page, '[data-testid="projects"]')
    assert not found, f"axe on the projects panel:\n{describe(found)}"

    project(page, NAME).get_by_test_id("project-start").click()
    header = page.get_by_test_id("chat-project")
    header.wait_for()
    assert header.inner_text() == f"Project: {NAME}"
    # The chat list is left as it was (all chats), not filtered to the project.
    assert page.get_by_test_id("chat-project-filter").input_value() == ""
    assert page.get_by_test_id("new-chat").inner_text() == "New chat"
    llm.script(Reply(answer("Arr, done.")))
    page.get_by_test_id("message-input").fill("Hello")
    page.get_by_test_id("send").click()
    page.get_by_text("Arr, done.").wait_for()
    told = [
        r.messages[0]["content"] for r in llm.chat_requests() if r.body["model"] != "util-model"
    ]
    assert "Answer like a pirate." in told[-1] and "The parser rewrite, in Rust" in told[-1]

    shown = page.locator("[data-testid=chat-list] > li:not([hidden])")
    expect(shown).to_have_count(2)
    page.get_by_test_id("chat-project-filter").select_option(NAME)
    expect(shown).to_have_count(1)  # the list shows the project's chats
    # Its long name in "New chat in ..." leaves Import beside it, in the sidebar.
    new_chat = page.get_by_test_id("new-chat")
    assert new_chat.get_attribute("title") == f"Start a chat in project {NAME}"
    sidebar = page.get_by_test_id("sidebar").bounding_box()
    imported = page.locator("label").filter(has=page.get_by_test_id("chat-import")).bounding_box()
    assert imported["x"] + imported["width"] <= sidebar["x"] + sidebar["width"]
    page.get_by_test_id("chat-project-filter").select_option("-")  # No project
    expect(shown).to_have_text(["Warm-up"])
    page.get_by_test_id("chat-project-filter").select_option("")  # All chats
    expect(shown).to_have_count(2)
    tags = shown.get_by_test_id("chat-item-project")
    expect(tags.first).to_have_text(NAME)  # the newest, with its project named

    # The panel's list, asked for on opening, comes back after the refusal (held here, as
    # a slow server would): the refusal stays in view, it is not wiped by the list.
    held = []
    page.route("**/api/projects", lambda route: held.append(route))
    page.get_by_test_id("projects-open").click()
    project(page, NAME).get_by_test_id("project-delete").click()
    page.get_by_test_id("confirm-ok").click()
    status = page.get_by_test_id("projects-status")
    expect(status).to_contain_text("1 chat(s)")
    for route in held:
        route.continue_()
    page.unroute("**/api/projects")
    expect(project(page, NAME).get_by_test_id("project-chats")).to_have_text("1 chat")
    assert "1 chat(s)" in status.inner_text() and "delete them first" in status.inner_text()
    assert (usr / "projects" / NAME / "settings.json").is_file()
