"""Agent Zero profiles in Chromium: the settings page says what does not work in each
profile and where its files come from. One lean test, one run_ui.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.support import agent_zero_profiles as a0
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess


@pytest.fixture(scope="module")
def shared(_fake_llm_server, tmp_path_factory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("agent-zero-profiles")
    a0.write_all(folder / "usr")
    server = live_server(folder, _fake_llm_server.base_url)
    yield server
    server.stop()


def test_the_settings_page_shows_each_profiles_status(browser, request, shared):
    for page in open_page(browser, request, shared.url):
        page.get_by_test_id("settings-open").click()
        toolsmith = page.locator('[data-testid="profile-status"][data-profile="toolsmith"]')
        toolsmith.wait_for()
        assert toolsmith.get_attribute("open") is not None  # a profile with a problem is open
        tools = toolsmith.get_by_test_id("profile-unavailable-tools").inner_text()
        assert "browse_web" in tools and "python.helpers.browser_use" in tools
        assert "quiet_tool" in tools and "no prompt file" in tools
        agent0 = page.locator('[data-testid="profile-status"][data-profile="agent0"]')
        assert "not offered to subordinates" in agent0.locator("summary").inner_text()
        assert "response_tool_tips" in agent0.get_by_test_id("profile-warnings").inner_text()
        role = agent0.locator('[data-origin="user"]', has_text="agent.system.main.role.md")
        assert "usr/agents" in role.inner_text()
        default = page.locator('[data-testid="profile-status"][data-profile="default"]')
        assert default.get_attribute("open") is None and "ready" in default.inner_text()
