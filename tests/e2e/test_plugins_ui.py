"""The Plugins panel in Chromium: install a plugin from a zip, see its parts and its own
panel, switch it off for everyone and for one agent profile, remove it; at phone width too.

One server for the module. Set PLUGINS_SHOTS to a folder to keep screenshots of the panel
at desktop and phone width.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import open_page
from tests.support.agents import wait_for
from tests.support.axe import axe_violations, describe
from tests.support.live_web import live_server
from tests.support.plugin_files import plugin_files, plugin_zip
from tests.support.server_process import ServerProcess


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server) -> Iterator[ServerProcess]:
    server = live_server(tmp_path_factory.mktemp("plugins-ui"), _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url, bypass_csp=True)  # axe runs in the page


def item(page, name: str):
    return page.locator(f"[data-testid=plugin-item][data-name='{name}']")


def shot(page, name: str) -> None:
    """The page as it is, when asked for (PLUGINS_SHOTS): never part of the repository."""
    folder = os.environ.get("PLUGINS_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{folder}/{name}.png")


def switches(usr: Path) -> dict:
    path = usr / "plugin_switches.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_install_a_zip_switch_it_and_remove_it(page, cadre, tmp_path):
    usr = Path(cadre.env["CADRE_USR_DIR"])
    page.get_by_test_id("plugins-open").click()
    page.get_by_test_id("plugins-status").wait_for()
    archive = tmp_path / "weather.zip"
    archive.write_bytes(plugin_zip(plugin_files()))
    page.get_by_test_id("plugins-install-zip").set_input_files(str(archive))
    weather = item(page, "weather")
    weather.wait_for()
    assert "Brings: tools, prompts, run-event handlers." in weather.inner_text()
    weather.get_by_text("Weather panel here").wait_for()  # the plugin's own panel
    assert weather.get_by_label("Home city").input_value() == "Paris"
    shot(page, "plugins-desktop")
    found = axe_violations(page, '[data-testid="plugins"]')
    assert not found, f"axe on the plugins panel:\n{describe(found)}"

    weather.get_by_test_id("plugin-on").uncheck()
    wait_for(lambda: switches(usr).get("global") == {"weather": False}, what="switched off")
    weather.get_by_test_id("plugin-on").check()
    wait_for(lambda: switches(usr).get("global") == {"weather": True}, what="switched on")
    page.get_by_test_id("plugins-profile").select_option("researcher")
    weather.get_by_test_id("plugin-profile-state").select_option("off")
    weather.get_by_test_id("plugin-source").get_by_text("off here").wait_for()
    assert switches(usr)["profiles"] == {"researcher": {"weather": False}}

    page.set_viewport_size({"width": 390, "height": 800})  # a phone: nothing sticks out
    wide = page.evaluate("() => { const d = document.querySelector('[data-testid=plugins]');"
                         " return d.scrollWidth - d.clientWidth; }")  # fmt: skip
    assert wide <= 0
    shot(page, "plugins-phone")

    weather.get_by_test_id("plugin-remove").click()
    page.get_by_test_id("confirm-ok").click()
    weather.wait_for(state="detached")
    assert not (usr / "plugins" / "weather").exists()


def test_agent_zero_extensions_are_listed_with_whether_they_run(page, cadre):
    usr = Path(cadre.env["CADRE_USR_DIR"])
    body = "from helpers.extension import Extension\n\nclass Hi(Extension):\n" \
           "    async def execute(self, **kwargs):\n        pass\n"  # fmt: skip
    for point in ("monologue_start", "response_stream"):
        folder = usr / "extensions" / point
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "_10_hi.py").write_text(body)
    page.get_by_test_id("plugins-open").click()
    rows = page.get_by_test_id("extension-item")
    rows.first.wait_for()
    said = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert len(said) == 2
    assert (
        "extensions/monologue_start/_10_hi.py" in said[0] and "runs at MonologueStarted" in said[0]
    )
    assert "response_stream: not run," in said[1]
    found = axe_violations(page, '[data-testid="plugins-extensions"]')
    assert not found, f"axe on the extensions' list:\n{describe(found)}"
    shot(page, "plugins-extensions")
