"""A plugin's log-item renderer as the server offers it: `GET /api/log-renderers` names the
plugins switched on anywhere that draw their tools' log items, with the module's address
(served as JavaScript, new when the file changes); a plugin switched off everywhere is left
out; a renderer path out of the plugin's webui/ folder makes the plugin unusable, in plain
words; a tool's log row names the plugin whose tool it is, and only then.
How the page draws with one is tests/e2e/test_plugins_ui.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support import members, shared_accounts
from tests.support.agents import answer, make_profile, reply
from tests.support.fake_llm import Reply, model_is
from tests.support.members import page
from tests.support.plugin_files import TOOL, plugin_files, write_plugin

KEY = {"X-API-Key": "api-secret"}

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
        ("webui/log.css", "must be a JavaScript file in the plugin's webui/ folder"),
    ],
)
def test_a_renderer_out_of_the_folder_or_no_script_makes_the_plugin_unusable(
    http, usr_dir, renderer, says
):
    drawing_plugin(usr_dir, renderer=renderer)
    listed = {p["name"]: p for p in http.get("/api/plugins").get_json()["plugins"]}
    assert not listed["weather"]["usable"]
    assert listed["weather"]["error"].startswith("plugin.yaml: log_renderer:")
    assert says in listed["weather"]["error"]
    assert renderers(http) == {}


def test_a_bare_name_is_a_file_of_webui_as_it_always_was(http, usr_dir):
    drawing_plugin(usr_dir, renderer="log.js")
    found = renderers(http)["weather"]["url"]
    assert (
        found.startswith("/plugins/weather/webui/log.js?v=") and http.get(found).status_code == 200
    )


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


def test_a_tool_row_names_its_plugin_and_a_same_named_tool_elsewhere_does_not(
    http, llm, usr_dir, monkeypatch
):
    """The page draws a row with a plugin's renderer only when the row names that plugin:
    a profile's own tool of the same name (or Cadre's) makes rows that name none."""
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    drawing_plugin(usr_dir)
    # A profile of its own with a tool of the same name (the plugin's source, copied).
    make_profile(usr_dir, "forecaster", tools={"weather_probe": TOOL})
    llm.add_rule(model_is("util-model"), Reply("A name"))
    rows = {}
    for profile_name in ("", "forecaster"):
        llm.script(Reply(reply("weather_probe", city="Oslo")), Reply(answer("Sunny.")))
        body = {"message": "Weather?", **({"profile": profile_name} if profile_name else {})}
        sent = http.post("/api/v1/message", headers=KEY, json=body)
        assert sent.status_code == 200, sent.get_json()
        log = http.get(f"/api/v1/chats/{sent.get_json()['context_id']}", headers=KEY).get_json()
        [row] = [item for item in log["log"] if item["type"] == "tool"]
        rows[profile_name] = row
    assert rows[""]["plugin"] == "weather"  # Agent 0's: the plugin's tool
    assert rows["forecaster"]["plugin"] == ""  # the profile's own tool of the same name
