"""Tools seen from Chromium: approving a command, its live output, a notification toast, a
file write, a browser step and an MCP tool each held by a tool rule until the page answers.

One run_ui.py serves the module (tests/e2e/conftest.py `shared_cadre`); the utility model's
replies (chat names) are set by `page`, the settings put back after each test.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from helpers.files import BASE_DIR
from tests.e2e.conftest import CHAT_NAME, open_page
from tests.e2e.test_chat_ui import PHONE, RESPONSE, new_chat, send
from tests.e2e.test_mcp_ui import ready_server
from tests.support.agents import answer, reply
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import put_back_settings
from tests.support.mcp_servers import servers_text
from tests.support.server_process import ServerProcess
from tests.support.shared_desktop import save
from tests.support.web_pages import start_site

CODE_ITEM = '[data-testid="log-item"][data-type="code_exe"]'
TOOL_ITEM = '[data-testid="log-item"][data-type="tool"]'
BROWSER_ITEM = '[data-testid="log-item"][data-type="browser"]'
MCP_ITEM = '[data-testid="log-item"][data-type="mcp_tool"]'
#: The test MCP server (tests/support/mcp_server.py) as the settings name it.
MCP_SERVERS = servers_text(tests={
    "command": sys.executable, "args": ["-m", "tests.support.mcp_server", "stdio"],
    "cwd": str(BASE_DIR),
})  # fmt: skip


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> ServerProcess:
    """One run_ui.py for the module (tests/e2e/conftest.py)."""
    return shared_cadre


@pytest.fixture
def page(shared_page):
    return shared_page


@pytest.fixture
def axe_page(browser, request, cadre: ServerProcess, llm):
    """As `page`, one in which axe-core may run (bypass_csp)."""
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    stored = cadre.usr_dir / "settings.json"
    before = stored.read_bytes()
    try:
        yield from open_page(browser, request, cadre.url, bypass_csp=True)
    finally:
        # Saved again once put back, so that the server takes it: the MCP server a test
        # added stops, and no later test's model sees its tools.
        put_back_settings(stored, before, lambda: save(cadre, {}))


@pytest.fixture
def site():
    website = start_site()
    yield website
    website.stop()


def test_a_command_waits_for_approval_and_its_output_streams(page, llm, cadre):
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("field-code_exec_confirm").check()
    page.get_by_test_id("settings-save").click()
    page.get_by_test_id("settings-save").wait_for(state="hidden")
    assert json.loads((cadre.usr_dir / "settings.json").read_text())["code_exec_confirm"] is True

    # The rest waits for the test's word (a file in the work folder): on a busy machine
    # the page may hear of the whole output at once however slowly it is written.
    go = cadre.usr_dir / "workdir" / f"go-{os.urandom(4).hex()}"
    command = f"echo line-1; until [ -e {go.name} ]; do sleep 0.05; done; echo line-2; echo line-3"
    llm.script(
        Reply(reply("code_execution_tool", runtime="terminal", code="echo never")),
        Reply(reply("code_execution_tool", runtime="terminal", code=command)),
        Reply(answer("Ran it.")),
    )
    new_chat(page)
    send(page, "run things")
    first = page.locator(CODE_ITEM).first
    first.get_by_test_id("deny").click()
    page.locator(CODE_ITEM).nth(1).get_by_test_id("approve").click()
    second = page.locator(CODE_ITEM).nth(1)
    output = second.locator(".li-output")
    output.filter(has_text="line-1").wait_for()
    assert "line-3" not in output.inner_text()  # seen while the command still runs
    go.touch()
    page.locator(RESPONSE).filter(has_text="Ran it.").wait_for()
    assert "line-3" in output.inner_text()
    assert first.get_by_test_id("approval").is_hidden()
    assert first.locator(".li-output").inner_text().startswith("The user denied the call")


def test_a_notification_shows_as_a_toast(page, llm):
    llm.script(
        Reply(reply("notify_user", title="Halfway there", message="Tests pass", type="success")),
        Reply(answer("Done.")),
    )
    new_chat(page)
    send(page, "work")
    toast = page.get_by_test_id("toast").filter(has_text="Halfway there")
    toast.wait_for()
    assert toast.get_attribute("data-type") == "success" and "Tests pass" in toast.inner_text()
    page.locator('[data-testid="log-item"][data-type="notify"]').wait_for()


def before(first, second) -> bool:
    """Whether `first` comes before `second` in the page (as it is read)."""
    following = 4  # Node.DOCUMENT_POSITION_FOLLOWING
    found = first.evaluate("(a, b) => a.compareDocumentPosition(b)", second.element_handle())
    return bool(found & following)


def held(page, item, tool: str):
    """`item` (a log item's locator) once its call of `tool` waits for the person's answer,
    which the status line and the agents' tree say too."""
    question = item.get_by_test_id("approval-question").filter(has_text=f"Allow A0 to use {tool}?")
    question.wait_for(timeout=60_000)  # after the call before it ran (a browser starts)
    status = page.get_by_test_id("status-line")
    status.filter(has_text=f"A0: waits for your answer ({tool})").wait_for()
    assert tool in page.get_by_test_id("tree-held").inner_text()
    agent = page.get_by_test_id("tree-agent").filter(has=page.get_by_test_id("tree-held"))
    assert agent.locator(".tree-status").inner_text() == "waiting for you"  # not "working"
    # The message box points at the buttons: a "yes" typed there would be only a message.
    box = page.get_by_test_id("message-input")
    assert box.get_attribute("placeholder").startswith("A tool call waits for your Allow or Deny")
    return item


def test_tool_rules_hold_a_write_a_browser_step_and_an_mcp_call_until_the_page_answers(
    axe_page, llm, cadre, site
):
    page = axe_page
    rules = [{"tool": name, "rule": "ask"}
             for name in ("text_editor:write", "browser:open", "mcp:tests:add")]  # fmt: skip
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("field-tool_rules").fill(json.dumps(rules))
    page.get_by_test_id("field-mcp_servers").fill(MCP_SERVERS)
    page.get_by_test_id("settings-save").click()
    page.get_by_test_id("settings-save").wait_for(state="hidden")
    assert json.loads((cadre.usr_dir / "settings.json").read_text())["tool_rules"] == rules
    page.get_by_test_id("settings-open").click()
    ready_server(page)  # the model's call of its tool must not race the server's start
    page.get_by_test_id("settings-cancel").click()

    llm.script(
        Reply(reply("text_editor:write", path="held/no.txt", content="no")),
        Reply(reply("text_editor:write", path="held/yes.txt", content="yes")),
        Reply(reply("browser:open", url=site.url + "/form")),
        Reply(reply("tests.add", a=2, b=3)),
        Reply(answer("Wrote yes.txt, saw the form; 2 + 3 = 5.")),
    )
    chat_id = new_chat(page)
    send(page, "write two files, look at the form, add 2 and 3")
    first = held(page, page.locator(TOOL_ITEM).first, "text_editor:write")
    assert "held/no.txt" in first.get_by_test_id("kvps").inner_text()  # the arguments
    # The chat list says a call waits.
    row = page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"]')
    assert row.get_by_test_id("chat-item-held").inner_text() == "1 to answer"
    found = axe_violations(page, f'{TOOL_ITEM} [data-testid="approval"]')
    assert not found, describe(found)
    page.set_viewport_size(PHONE)  # every button within a phone's width
    try:
        for button in ("approve", "approve-chat", "approve-rule", "deny"):
            box = first.get_by_test_id(button).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    finally:
        page.set_viewport_size({"width": 1280, "height": 800})
    # Denied with a reason, by the keyboard: the agent reads it, the item says it.
    first.get_by_label("Reason for denying").fill("not that folder")
    first.get_by_label("Reason for denying").press("Enter")
    first.get_by_test_id("approval-state").filter(has_text="Denied: not that folder").wait_for()
    assert first.get_by_test_id("approval").is_hidden()

    second = held(page, page.locator(TOOL_ITEM).nth(1), "text_editor:write")
    second.get_by_test_id("approve").click()
    step = held(page, page.locator(BROWSER_ITEM).first, "browser:open")
    # Where it would go, said above the question as every call's arguments are.
    assert step.get_by_test_id("browser-url").inner_text() == site.url + "/form"
    assert before(step.get_by_test_id("browser-url"), step.get_by_test_id("approval"))
    # No room kept for a screenshot not yet taken: the URL starts where the question does.
    left = [step.get_by_test_id(part).bounding_box()["x"] for part in ("browser-url", "approval")]
    assert left[0] == left[1], left
    step.get_by_test_id("approve").click()
    call = held(page, page.locator(MCP_ITEM).first, "tests.add")  # as its item says
    rows = call.get_by_test_id("kvps").locator("tr").all_inner_texts()
    assert [" ".join(row.split()) for row in rows] == ["a 2", "b 3"]  # the arguments
    call.get_by_test_id("approve").click()

    page.locator(RESPONSE).filter(has_text="2 + 3 = 5.").wait_for(timeout=60_000)
    for item in (second, step, call):
        assert item.get_by_test_id("approval-state").inner_text() == "Allowed"
    assert step.get_by_test_id("browser-title").inner_text() == "Search"  # it ran
    assert call.locator(".li-result").inner_text().strip() == "5"
    assert row.get_by_test_id("chat-item-held").is_hidden()
    work = cadre.usr_dir / "workdir" / "held"
    assert (work / "yes.txt").read_text() == "yes" and not (work / "no.txt").exists()
    told = [r for r in llm.chat_requests() if r.body["model"] != "util-model"][1]
    assert 'Their reason: "not that folder".' in told.messages[-1]["content"]
