"""Plugins through the real app and the loop: installed from a zip and from a local git
repository, their tool offered to the model (and not in a project where the plugin is
off), their handlers run (one that raises is shown, and the run goes on), their settings
checked, their panel served; updated and removed; hostile zips refused."""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile

import pytest

from profiles import plugin_install
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.plugin_files import commit, git_repo, plugin_files, plugin_zip

KEY = {"X-API-Key": "api-secret"}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")


def upload(http, data: bytes, name: str = "weather.zip", replace: bool = False):
    form = {"archive": (io.BytesIO(data), name)}
    if replace:
        form["replace"] = "1"
    return http.post("/api/plugins/install", data=form, content_type="multipart/form-data")


def listed(http, **where) -> dict:
    query = "&".join(f"{k}={v}" for k, v in where.items())
    return {p["name"]: p for p in http.get(f"/api/plugins?{query}").get_json()["plugins"]}


def send(http, message: str, project: str = "") -> dict:
    payload = {"message": message, **({"project": project} if project else {})}
    sent = http.post("/api/v1/message", headers=KEY, json=payload)
    assert sent.status_code == 200, sent.get_json()
    return sent.get_json()


def system_prompt(llm, at: int = -1) -> str:
    return llm.chat_requests("chat-model")[at].messages[0]["content"]


def test_a_zip_plugin_brings_its_tool_handlers_settings_and_panel_and_is_off_in_a_project(
    http, llm, usr_dir
):
    made = upload(http, plugin_zip(plugin_files()))
    assert made.status_code == 200, made.get_json()
    assert made.get_json()["installed"] == "weather"
    found = listed(http)["weather"]
    assert found["usable"] and found["on"] and found["source"] == "user"
    assert set(found["parts"]) == {"tools", "prompts", "handlers"}
    assert found["origin"] == "zip" and found["version"] == "1.0"
    assert [f["name"] for f in found["settings"]["fields"]] == ["city", "days"]
    panel = http.get(found["panel"])
    assert panel.status_code == 200 and b"Weather panel here" in panel.data
    assert panel.mimetype == "text/javascript"
    assert http.get("/plugins/weather/webui/../plugin.yaml").status_code in (400, 404)
    assert http.get("/plugins/weather/webui/%2e%2e/handlers.py").status_code in (400, 404)

    # Its tool is offered and runs; its handler sees the run's answer.
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(reply("weather_probe", city="Paris")), Reply(answer("Sunny.")))
    assert send(http, "Weather?")["response"] == "Sunny."
    assert "weather_probe" in system_prompt(llm, 0)
    assert "weather-probe says: sunny in Paris" in llm.chat_requests("chat-model")[1].messages[
        -1]["content"]  # fmt: skip
    answers = usr_dir / "plugins" / "weather" / "answers.txt"
    wait_for(lambda: answers.exists() and answers.read_text() == "Sunny.\n", what="handler")

    # Off for project alpha alone: its tool is not offered there, and still is elsewhere.
    assert http.post("/api/projects", json={"name": "alpha"}).status_code == 201
    switched = http.post("/api/plugins/weather/switch",
                         json={"on": False, "scope": "project", "project": "alpha"})  # fmt: skip
    assert switched.status_code == 200 and switched.get_json()["on_here"] is False
    assert listed(http, project="alpha")["weather"]["on_here"] is False
    assert listed(http)["weather"]["on"] is True
    llm.script(Reply(answer("In alpha.")), Reply(answer("Outside.")))
    send(http, "Weather?", project="alpha")
    assert "weather_probe" not in system_prompt(llm)
    send(http, "Weather?")
    assert "weather_probe" in system_prompt(llm)
    # The run's end is told after its answer is out: the handler's line comes soon after.
    wait_for(lambda: answers.read_text().count("\n") == 2, what="the second handler call")
    assert answers.read_text() == "Sunny.\nOutside.\n"  # no handler in alpha either
    switches = json.loads((usr_dir / "plugin_switches.json").read_text())
    assert switches["projects"] == {"projects/alpha": {"weather": False}}

    # Off everywhere, then the project's own switch removed: off in alpha too.
    http.post("/api/plugins/weather/switch", json={"on": False})
    http.post("/api/plugins/weather/switch",
              json={"on": None, "scope": "project", "project": "alpha"})  # fmt: skip
    assert listed(http, project="alpha")["weather"]["on_here"] is False
    http.post("/api/plugins/weather/switch", json={"on": True})

    unnamed = http.post("/api/plugins/weather/switch", json={"on": False, "scope": "project"})
    assert unnamed.status_code == 400 and "name the project" in unnamed.get_json()["error"]
    missing = http.post("/api/plugins/nope/switch", json={"on": False})
    assert missing.status_code == 404 and missing.get_json()["error"] == "no plugin 'nope'"

    # Its settings are checked with their labels.
    bad = http.post("/api/plugins/weather/settings", json={"values": {"days": 40}})
    assert bad.status_code == 400 and bad.get_json()["error"].startswith("Days ahead:")
    good = http.post("/api/plugins/weather/settings", json={"values": {"city": "Lyon"}})
    assert good.get_json()["values"] == {"city": "Lyon", "days": 3}

    # Removed: gone from the list and from the prompt.
    assert http.post("/api/plugins/weather/delete").get_json() == {"deleted": "weather"}
    assert "weather" not in listed(http)
    assert not (usr_dir / "plugins" / "weather").exists()
    llm.script(Reply(answer("Gone.")))
    send(http, "Weather?")
    assert "weather_probe" not in system_prompt(llm)


def test_a_raising_handler_is_shown_and_the_run_goes_on(http, llm):
    assert upload(http, plugin_zip(plugin_files())).status_code == 200
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(reply("weather_probe", city="Boom")), Reply(answer("Still here.")))
    assert send(http, "Weather?")["response"] == "Still here."
    shown = listed(http)["weather"]["problems"]
    assert [(p["where"], p["error"]) for p in shown] == [
        ("handler on_tool_ended", "ValueError: the probe exploded")
    ]


def test_a_plugin_from_a_local_git_repository_installs_and_updates(http, tmp_path):
    repo = git_repo(tmp_path / "repo", plugin_files())
    made = http.post("/api/plugins/install", json={"source": str(repo)})
    assert made.status_code == 200, made.get_json()
    found = listed(http)["weather"]
    assert found["origin"] == "git" and found["version"] == "1.0"
    again = http.post("/api/plugins/install", json={"source": str(repo)})
    assert again.status_code == 409 and "installed already" in again.get_json()["error"]

    (repo / "plugin.yaml").write_text(plugin_files(version="2.0")["plugin.yaml"])
    commit(repo, "second")
    assert http.post("/api/plugins/weather/update").status_code == 200
    assert listed(http)["weather"]["version"] == "2.0"


def test_a_git_repository_with_a_link_is_refused(http, tmp_path, usr_dir):
    repo = tmp_path / "linked"
    files = plugin_files()
    repo.mkdir()
    os.symlink("/etc/passwd", repo / "passwd")
    git_repo(repo, files)
    refused = http.post("/api/plugins/install", json={"source": str(repo)})
    assert refused.status_code == 400 and "symbolic link" in refused.get_json()["error"]
    assert os.listdir(usr_dir / "plugins") == []


def _zip_with(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


def _link(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o120777 << 16
    return info


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ([("../evil/plugin.yaml", b"name: evil\n")], "goes up a folder"),
        ([("/abs/plugin.yaml", b"name: abs\n")], "absolute path"),
        ([("w/plugin.yaml", b"name: w\n"), (_link("w/tools"), b"/etc")], "symbolic link"),
        ([("w/plugin.yaml", b"name: w\n"), ("w/big.bin", b"\0" * (11 * 2**20))], "zip bomb"),
        ([("w/readme.md", b"hi")], "no plugin.yaml"),
        ([("w/plugin.yaml", b"name: ../w\n")], "plugin.yaml: name"),
    ],
)
def test_hostile_zips_are_refused_and_leave_nothing(http, usr_dir, entries, says):
    refused = upload(http, _zip_with(entries))
    assert refused.status_code == 400 and says in refused.get_json()["error"]
    folder = usr_dir / "plugins"
    assert (sorted(os.listdir(folder)) if folder.exists() else []) == []


def test_python_dependencies_are_installed_only_once_confirmed(http, tmp_path, monkeypatch):
    files = plugin_files(extra="requires: {python: [cadre-no-such-package==1.0]}\n")
    assert upload(http, plugin_zip(files)).status_code == 200
    assert listed(http)["weather"]["dependencies"] == [
        {"requirement": "cadre-no-such-package==1.0", "installed": False}
    ]
    recorder = tmp_path / "pip_args.json"
    script = tmp_path / "fake_pip.py"
    script.write_text(f"import json, sys\njson.dump(sys.argv[1:], open({str(recorder)!r}, 'w'))\n")
    monkeypatch.setattr(plugin_install, "PIP", [sys.executable, str(script)])
    asked = http.post("/api/plugins/weather/dependencies", json={})
    assert asked.status_code == 409 and asked.get_json()["packages"] == [
        "cadre-no-such-package==1.0"
    ]
    assert not recorder.exists()  # nothing ran without the yes
    done = http.post("/api/plugins/weather/dependencies", json={"confirm": True})
    assert done.get_json() == {"installed": ["cadre-no-such-package==1.0"]}
    assert json.loads(recorder.read_text()) == ["--", "cadre-no-such-package==1.0"]


def test_a_broken_manifest_or_tool_is_listed_with_its_reason(http, usr_dir, llm):
    folder = usr_dir / "plugins" / "odd"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: odd\nversion: [1]\n")
    found = listed(http)["odd"]
    assert not found["usable"] and found["error"].startswith("plugin.yaml: version:")

    files = {**plugin_files(), "tools/weather_probe.py": "import no_such_module_here\n"}
    assert upload(http, plugin_zip(files)).status_code == 200
    shown = listed(http)["weather"]["problems"]
    assert shown[0]["where"] == "tools/weather_probe.py"
    assert "ModuleNotFoundError" in shown[0]["error"]
    # The run goes on: the model is told the tool cannot be used.
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(reply("weather_probe", city="Paris")), Reply(answer("Without it.")))
    assert send(http, "Weather?")["response"] == "Without it."


SLOW_HANDLERS = """
import asyncio
import time


async def on_run_started(event):
    await asyncio.sleep(3600)


def on_monologue_started(event):
    time.sleep(2)
"""


def test_a_handler_past_its_time_is_left_behind_and_shown(http, llm, monkeypatch):
    monkeypatch.setenv("CADRE_PLUGIN_HANDLER_SECONDS", "0.2")
    files = {**plugin_files(), "handlers.py": SLOW_HANDLERS}
    assert upload(http, plugin_zip(files)).status_code == 200
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(answer("Done anyway.")))
    assert send(http, "Hello")["response"] == "Done anyway."
    shown = {p["where"]: p["error"] for p in listed(http)["weather"]["problems"]}
    for handler in ("on_run_started", "on_monologue_started"):
        assert shown[f"handler {handler}"] == (
            "took longer than 0.2 s and was left behind; the run went on"
        )


def test_an_agent_zero_style_manifest_without_a_name_takes_its_folder_name(http, tmp_path):
    files = {
        **plugin_files(),
        "plugin.yaml": "title: Weather\nversion: 1.0.0\nalways_enabled: false\n",
        "api/hello.py": "x = 1\n",
        "extensions/webui/sidebar-start/a.html": "<p>a</p>\n",
    }
    made = upload(http, plugin_zip(files, top="a0-weather"))
    assert made.status_code == 200 and made.get_json()["installed"] == "a0-weather"
    found = listed(http)["a0-weather"]
    assert found["usable"] and found["unused"] == ["always_enabled"]
    assert found["not_supported"] == ["api", "extensions/webui"]
    repo = git_repo(tmp_path / "sky.git", files)
    made = http.post("/api/plugins/install", json={"source": str(repo)})
    assert made.status_code == 200 and made.get_json()["installed"] == "sky"
