"""A plugin's log-item renderer as the server offers it: `GET /api/log-renderers` names the
plugins switched on anywhere that draw their tools' log items, with those tools and the
module's address (served as JavaScript); a plugin switched off everywhere is left out; a
renderer path out of the plugin's folder makes the plugin unusable, in plain words.
How the page draws with one is tests/e2e/test_plugins_ui.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support import members, shared_accounts
from tests.support.members import page
from tests.support.plugin_files import plugin_files, write_plugin

RENDERER = "export function render(item, root) { root.textContent = item.content; }\n"


def renderers(http) -> dict:
    answer = http.get("/api/log-renderers")
    assert answer.status_code == 200, answer.get_json()
    return {found["plugin"]: found for found in answer.get_json()["renderers"]}


def drawing_plugin(usr_dir: Path, renderer: str = "webui/log.js") -> Path:
    files = plugin_files(extra=f"log_renderer: {renderer}\n")
    return write_plugin(usr_dir / "plugins" / "weather", {**files, "webui/log.js": RENDERER})


def test_a_plugin_with_a_renderer_is_listed_with_its_tools_and_its_module(http, usr_dir):
    assert renderers(http) == {}  # the shipped plugins draw nothing of their own
    drawing_plugin(usr_dir)
    found = renderers(http)["weather"]
    assert found["tools"] == ["weather_probe"]
    # Its address changes with the file: the page asks for an updated module anew.
    assert found["url"].startswith("/plugins/weather/webui/log.js?v=")
    module = http.get(found["url"])
    assert module.status_code == 200 and module.mimetype == "text/javascript"
    assert b"export function render" in module.data
    listed = http.get("/api/plugins").get_json()["plugins"]
    assert next(p for p in listed if p["name"] == "weather")["log_renderer"] is True


def test_switched_off_everywhere_it_is_left_out_and_on_for_one_project_it_is_not(http, usr_dir):
    drawing_plugin(usr_dir)
    switch = "/api/plugins/weather/switch"
    assert http.post(switch, json={"on": False}).status_code == 200
    assert "weather" not in renderers(http)
    made = http.post("/api/projects", json={"name": "alpha"})
    assert made.status_code in (200, 201), made.get_json()
    on_here = {"on": True, "scope": "project", "project": "alpha"}
    assert http.post(switch, json=on_here).status_code == 200, "switched on for alpha"
    assert "weather" in renderers(http)  # alpha's chats show its tools' items its way


@pytest.mark.parametrize(
    ("renderer", "says"),
    [
        ("../../settings.json", "must be a path inside the plugin's folder"),
        ("log.js", "must be a JavaScript file in the plugin's webui/ folder"),
        ("webui/log.css", "must be a JavaScript file in the plugin's webui/ folder"),
    ],
)
def test_a_renderer_outside_its_webui_folder_makes_the_plugin_unusable(
    http, usr_dir, renderer, says
):
    drawing_plugin(usr_dir, renderer=renderer)
    listed = {p["name"]: p for p in http.get("/api/plugins").get_json()["plugins"]}
    assert not listed["weather"]["usable"]
    assert listed["weather"]["error"].startswith("plugin.yaml: log_renderer:")
    assert says in listed["weather"]["error"]
    assert renderers(http) == {}


def test_an_updated_renderer_gets_a_new_address(http, usr_dir):
    folder = drawing_plugin(usr_dir)
    before = renderers(http)["weather"]["url"]
    module = folder / "webui" / "log.js"
    module.write_text(RENDERER.replace("item.content", "item.heading"))
    stamp = module.stat().st_mtime_ns + 5_000_000_000
    os.utime(module, ns=(stamp, stamp))  # a later edit, whatever the clock's grain
    after = renderers(http)["weather"]["url"]
    assert after != before and b"item.heading" in http.get(after).data


def test_a_member_gets_the_renderers_and_is_refused_the_plugins_panel(accounts_server):
    """A member's page draws the plugins' items as the admin's does; managing plugins
    stays the admin's (their code runs on the host)."""
    with shared_accounts.for_module(accounts_server) as cadre:
        folder = drawing_plugin(cadre.usr_dir)
        try:
            ann = members.Member(cadre, shared_accounts.ADMIN_KEY)
            got = page(ann.browser, cadre, "GET", "/api/log-renderers")
            assert got.status_code == 200, got.text
            assert [r["plugin"] for r in got.json()["renderers"]] == ["weather"]
            module = page(ann.browser, cadre, "GET", "/plugins/weather/webui/log.js")
            assert module.status_code == 200 and "export function render" in module.text
            refused = page(ann.browser, cadre, "GET", "/api/plugins")
            assert refused.status_code == 403 and "only an admin" in refused.json()["error"]
        finally:
            shutil.rmtree(folder)  # the server is shared with other modules
