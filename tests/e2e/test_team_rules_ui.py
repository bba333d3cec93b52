"""Who may call whom and handoff in Chromium: the settings page's graph and the chat
header after a handoff, also after a restart. One run_ui.py serves the module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.e2e.test_chat_ui import RESPONSE, new_chat, send
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess

AGENT0 = "title: Agent 0\nsubordinate: false\nsubordinates: [researcher]\n"


@pytest.fixture(scope="module")
def shared(_fake_llm_server, tmp_path_factory) -> Iterator[ServerProcess]:
    """run_ui.py whose Agent 0 may call only the researcher."""
    folder = tmp_path_factory.mktemp("team-rules")
    profile = folder / "usr" / "agents" / "agent0"
    profile.mkdir(parents=True)
    (profile / "agent.yaml").write_text(AGENT0)
    server = live_server(folder, _fake_llm_server.base_url, llm_retry_delay="0.01")
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, shared, llm) -> Iterator[object]:
    llm.add_rule(model_is("util-model"), Reply("Bees"))  # the chat's name
    for page in open_page(browser, request, shared.url):
        page.set_default_timeout(30_000)  # a shared machine; the first model call is slow
        yield page


def test_the_settings_page_draws_who_may_call_whom(page):
    page.get_by_test_id("settings-open").click()
    graph = page.get_by_test_id("profile-graph")
    graph.wait_for()
    picture = page.get_by_test_id("profile-graph-picture")
    assert picture.get_attribute("role") == "img"
    caption = page.locator(f"#{picture.get_attribute('aria-labelledby')}").inner_text()
    assert "may call which" in caption
    edges = picture.locator("path.graph-edge").evaluate_all(
        "els => els.map(e => e.dataset.from + '>' + e.dataset.to)"
    )
    assert [e for e in edges if e.startswith("agent0>")] == ["agent0>researcher"]
    assert "developer>researcher" in edges and "researcher>developer" in edges
    # A workflow profile runs its steps: arrows to them only, and the list says how.
    assert [e for e in edges if e.startswith("panel>")] == ["panel>researcher", "panel>default"]
    assert picture.locator("path.graph-edge").first.bounding_box()["width"] > 50  # drawn
    items = page.get_by_test_id("profile-graph-list").locator("li")
    agent0 = items.filter(has_text="Agent 0 (agent0)")
    assert agent0.inner_text() == "Agent 0 (agent0) may call Researcher (researcher)."
    assert items.and_(page.locator('[data-profile="panel"]')).inner_text() == (
        "Panel (panel) runs Researcher (researcher) and Default (default) at once, "
        "then Default (default) on their answers."
    )


def test_the_header_shows_who_talks_after_a_handoff_and_a_restart(page, llm, shared, browser,
                                                                   request):  # fmt: skip
    llm.script(
        Reply(reply("handoff", profile="researcher", message="The user asks about bees.")),
        Reply(answer("Bees dance to show where food is.")),
    )
    new_chat(page)
    talker = page.get_by_test_id("chat-talker")
    talker.filter(has_text="Talking with Agent 0").wait_for()
    send(page, "Why do bees dance?")
    page.locator(RESPONSE).filter(has_text="Bees dance").wait_for()
    talker.filter(has_text="Talking with Researcher · handed over by Agent 0").wait_for()
    handed = page.locator('[data-testid="log-item"][data-type="info"]')
    line = handed.filter(has_text="talks with you")
    assert "Researcher talks with you now" in line.inner_text()
    # Only in plain words: no text meant for the model, no table of the handoff's data.
    assert "handed to you" not in page.get_by_test_id("log-list").inner_text()
    assert line.locator(".kvps tr").count() == 0
    # Agent 0's later items, and the tree, name the profile that talks now.
    said = page.locator(RESPONSE).filter(has_text="Bees dance").locator(".li-chip")
    assert said.inner_text() == "A0 · Researcher"
    tree = page.get_by_test_id("agent-tree")
    assert tree.locator('[data-agent="A0"] .tree-profile').inner_text() == "Researcher"

    shared.restart()
    page.reload()
    page.locator('[data-testid="chat-item"]').first.click()
    talker.filter(has_text="Talking with Researcher · handed over by Agent 0").wait_for()
