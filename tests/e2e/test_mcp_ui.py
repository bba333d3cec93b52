"""MCP seen from Chromium: the settings editor shows a real stdio MCP server's state and
tools and what is wrong with a bad JSON as it is typed; a call of the server's tool made
by the scripted model shows in the log as an MCP item with its arguments and result.

One run_ui.py for the module; the MCP server is tests/support/mcp_server.py, started by
Cadre itself from the saved `mcp_servers` setting.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from helpers.files import BASE_DIR
from tests.e2e.conftest import open_page
from tests.e2e.test_chat_ui import RESPONSE, new_chat, send
from tests.support.agents import answer, reply
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess

MCP_ITEM = '[data-testid="log-item"][data-type="mcp_tool"]'
#: A ready server's state, with the number of its tools.
READY = re.compile(r"^Ready — (\d+) tools$")


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    """One server for the module, with the test MCP server saved in its settings."""
    folder = tmp_path_factory.mktemp("mcp-ui")
    servers = {"mcpServers": {"tests": {
        "command": sys.executable, "args": ["-m", "tests.support.mcp_server", "stdio"],
        "cwd": str(BASE_DIR),
    }}}  # fmt: skip
    (folder / "usr").mkdir()
    settings = {"mcp_servers": json.dumps(servers, indent=2)}
    (folder / "usr" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    server = live_server(folder, _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    # bypass_csp: axe-core is injected into the page.
    yield from open_page(browser, request, cadre.url, bypass_csp=True)


def open_settings(page) -> None:
    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("field-mcp_servers").wait_for()


def ready_server(page):
    """The test server's row once the page shows it ready (Cadre starts it in the background)."""
    server = page.locator('[data-testid="mcp-server"][data-name="tests"]')
    expect(server.get_by_test_id("mcp-state")).to_have_text(READY, timeout=30_000)
    return server


def test_the_editor_shows_the_servers_state_and_tools_and_restarts_it(page):
    open_settings(page)
    server = ready_server(page)
    assert "stdio" in server.inner_text()

    count = int(READY.match(server.get_by_test_id("mcp-state").inner_text()).group(1))
    tools = server.get_by_test_id("mcp-tools")
    expect(tools.locator("li").first).to_be_hidden()  # folded until asked for
    tools.locator("summary").click()
    expect(tools.locator("summary")).to_have_text(f"Tools ({count})")
    expect(tools.locator("li")).to_have_count(count)
    expect(tools.locator("li").filter(has_text="tests.add")).to_contain_text("Add two integers.")
    found = axe_violations(page, '[data-testid="mcp-status"]')
    assert not found, describe(found)

    restart = server.get_by_role("button", name="Restart tests")
    restart.press("Enter")  # reachable from the keyboard
    expect(restart).to_have_text("Restarting…")
    expect(restart).to_have_text("Restart")  # the server took it; the next status came
    expect(page.get_by_test_id("mcp-status-error")).to_be_hidden()
    expect(server.get_by_test_id("mcp-state")).to_have_text(READY, timeout=30_000)


def test_bad_json_is_said_under_the_box_as_it_is_typed(page, cadre):
    open_settings(page)
    box = page.get_by_test_id("field-mcp_servers")
    box.fill('{"mcpServers": {"tests": ')
    problem = page.get_by_test_id("field-error-mcp_servers")
    expect(problem).to_contain_text("not valid JSON")
    expect(box).to_have_attribute("aria-invalid", "true")
    assert problem.get_attribute("id") in box.get_attribute("aria-describedby").split()

    # Saved anyway: refused, the text kept where it was typed, the stored value untouched.
    stored = Path(cadre.env["CADRE_USR_DIR"]) / "settings.json"
    before = stored.read_text(encoding="utf-8")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text("mcp_servers")
    expect(problem).to_contain_text("not valid JSON")
    expect(box).to_be_focused()
    expect(box).to_have_value('{"mcpServers": {"tests": ')
    assert stored.read_text(encoding="utf-8") == before

    box.fill('{"mcpServers": {"bad name!": {"command": "x"}}}')
    expect(problem).to_contain_text("server name 'bad name!'")
    box.fill('{"mcpServers": {"other": {"url": "http://127.0.0.1:9/mcp"}}}')
    expect(problem).to_be_hidden()
    expect(box).not_to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("mcp-check")).to_contain_text("1 server (other)")


def test_calls_of_mcp_tools_show_in_the_log_with_their_results(page, llm):
    open_settings(page)
    ready_server(page)  # the model's calls must not race the server's start
    page.get_by_test_id("settings-cancel").click()
    llm.add_rule(model_is("util-model"), Reply("Sums"))
    llm.script(
        Reply(reply("tests.add", headline="Adding", a=2, b=3)),
        Reply(reply("tests.image", headline="Drawing")),
        Reply(answer("It is 5.")),
    )
    new_chat(page)
    send(page, "add 2 and 3, then draw")
    expect(page.locator(RESPONSE).filter(has_text="It is 5.")).to_be_visible(timeout=30_000)

    added, drawn = page.locator(MCP_ITEM).nth(0), page.locator(MCP_ITEM).nth(1)
    expect(added.locator(".li-title")).to_have_text("tests.add")
    expect(added.locator(".li-mcp-badge")).to_have_text("MCP")
    rows = added.get_by_test_id("kvps").locator("tr")
    expect(rows).to_have_text([re.compile(r"a\s*2"), re.compile(r"b\s*3")])
    expect(added.locator(".li-result .long-text-body")).to_have_text("5")

    expect(drawn.locator(".li-title")).to_have_text("tests.image")
    image = drawn.get_by_test_id("mcp-image").locator("img")
    expect(image).to_be_visible()
    # Loaded from the chat's files through the server, not just named.
    loaded = "img => img.complete && img.naturalWidth === 2"
    page.wait_for_function(loaded, arg=image.element_handle())
    expect(drawn.get_by_test_id("kvps")).to_be_hidden()  # no arguments, no empty table


#: Builds an `mcp_tool` log item with the page's own module from hostile text and
#: addresses (what a hostile server's result or a misled model's arguments can hold).
HOSTILE_ITEM = """async () => {
  const { MCP_TOOL } = await import("/js/views/log-mcp.js");
  const evil = '<img src=x onerror="window.__xss = 1"><b>bold</b>';
  const title = document.createElement("span");
  const head = document.createElement("div");
  head.append(title);
  const view = { parts: { title }, head, el: document.createElement("div") };
  MCP_TOOL.build(view);
  const images = ["//evil.example/a.png", "javascript:alert(1)", "/\\\\evil.example/b.png",
                  "/api/chats/c1/files/mcp/ok.png"];
  MCP_TOOL.update(view, { kvps: { [evil]: evil, images, files: ["https://evil.example/f"] },
                          content: evil }, null);
  document.body.append(view.el);
  await new Promise((done) => setTimeout(done, 50));
  return { xss: window.__xss === 1, bold: view.el.querySelectorAll("b").length,
           shown: view.el.textContent.includes(evil),
           links: [...view.el.querySelectorAll("a, img")]
             .map((e) => e.getAttribute("href") ?? e.getAttribute("src")) };
}"""


def test_hostile_mcp_text_and_addresses_are_never_html_or_foreign_links(page):
    found = page.evaluate(HOSTILE_ITEM)
    assert found["xss"] is False and found["bold"] == 0 and found["shown"] is True
    # Only the addresses Cadre serves a chat's saved files at become links or images.
    assert set(found["links"]) == {"/api/chats/c1/files/mcp/ok.png"}, found["links"]
