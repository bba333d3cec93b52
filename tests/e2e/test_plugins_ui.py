"""The Plugins panel in Chromium: install a plugin from a zip, see its parts and its own
panel, switch it off for everyone and for one agent profile, remove it; at phone width too.
A plugin's log-item renderer draws its tool's items, and the plain view shows when it fails.

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
from tests.e2e.test_chat_ui import new_chat, send
from tests.support.agents import answer, reply, wait_for
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.live_web import live_server
from tests.support.plugin_files import PROMPT, TOOL, plugin_files, plugin_zip, write_plugin
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


#: A log-item renderer: a card with the city and the tool's answer, written as text (a
#: hostile city stays text); it cannot draw Boom.
FORECAST_VIEW = """export function render(item, root) {
  const city = String(item.kvps.city ?? "");
  if (city === "Boom") throw new Error("no map of Boom");
  const card = document.createElement("div");
  card.className = "forecast-card";
  const head = document.createElement("strong");
  head.textContent = `Forecast for ${city}`;
  const said = document.createElement("p");
  said.textContent = item.content || "asking...";
  card.append(head, said);
  root.replaceChildren(card);
}
"""

FORECAST_TOOL = TOOL.replace("WeatherProbe", "ForecastProbe").replace("weather-probe", "forecast")


def test_a_plugins_renderer_draws_its_tools_items_and_falls_back_when_it_fails(page, cadre, llm):
    usr = Path(cadre.env["CADRE_USR_DIR"])
    manifest = 'name: forecast\ntitle: Forecast\nversion: "1"\nlog_renderer: webui/log.js\n'
    write_plugin(usr / "plugins" / "forecast", {
        "plugin.yaml": manifest, "tools/forecast_probe.py": FORECAST_TOOL,
        "prompts/agent.system.tool.forecast_probe.md": PROMPT.replace("weather", "forecast"),
        "webui/log.js": FORECAST_VIEW,
    })  # fmt: skip
    hostile = "<img src=x onerror=window.pwned=1>Oslo"
    llm.add_rule(model_is("util-model"), Reply("Forecasts"))
    llm.script(Reply(reply("forecast_probe", city=hostile)), Reply(answer("Sunny.")),
               Reply(reply("forecast_probe", city="Boom")), Reply(answer("No map.")))  # fmt: skip
    new_chat(page)
    send(page, "Weather in Oslo?")
    drawn = page.locator("[data-testid=log-item][data-type=tool]").first
    card = drawn.get_by_test_id("plugin-view").locator(".forecast-card")
    card.get_by_text("forecast says: sunny in").wait_for()
    assert card.locator("strong").inner_text() == f"Forecast for {hostile}"
    assert drawn.locator("img").count() == 0 and page.evaluate("window.pwned") is None
    table = drawn.get_by_test_id("kvps")
    assert table.is_hidden()  # the plugin's card instead of the plain arguments
    details = drawn.get_by_test_id("plugin-details")
    details.click()
    table.wait_for()
    assert details.get_attribute("aria-pressed") == "true"
    shot(page, "plugin-renderer-desktop")
    if os.environ.get("PLUGINS_SHOTS"):  # the same chat on a phone, when shots are asked for
        phone = page.context.browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(page.url)
        phone.locator(".forecast-card").wait_for()
        shot(phone, "plugin-renderer-phone")
        phone.close()
    found = axe_violations(page, "[data-testid=log-item][data-type=tool]")
    assert not found, f"axe on a plugin-drawn item:\n{describe(found)}"

    send(page, "And in Boom?")
    plain = page.locator("[data-testid=log-item][data-type=tool]").nth(1)
    failed = plain.get_by_test_id("plugin-view-failed")
    failed.wait_for()
    assert failed.inner_text() == (
        "The forecast plugin could not draw this step (no map of Boom), so it is shown plainly."
    )
    plain.get_by_test_id("kvps").wait_for()  # the plain arguments instead
    assert plain.get_by_test_id("plugin-details").is_hidden()
