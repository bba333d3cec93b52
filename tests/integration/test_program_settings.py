"""Settings that make the host run a program, through the real Flask app: a program an
agent could have written (in a work folder, in usr/) is refused at save; a change needs
the account's password when a login is set (a wrong one counts in the login throttle);
no route that takes an API key changes one."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers.settings import load_settings
from server.security import auth
from server.security.throttle import MAX_ATTEMPTS
from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is

PASSWORD = "corrèct horse"
KEY = {"X-API-Key": "api-secret"}


def planted(folder: Path, name: str = "evil.sh") -> Path:
    """A script an agent could have written: it leaves a mark when run."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\ntouch '{folder}/RAN'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def stdio(command: str, *args: str, **fields: object) -> str:
    return json.dumps({"mcpServers": {"tool": {"command": command, "args": list(args), **fields}}})


def stored(usr_dir: Path) -> dict:
    path = usr_dir / "settings.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize(
    "change",
    [
        lambda work: {"code_exec_bwrap": str(planted(work))},
        lambda work: {"browser_executable": str(planted(work))},
        lambda work: {"local_model_path": str(planted(work, "model.gguf"))},
        lambda work: {"mcp_servers": stdio(str(planted(work)))},
        # An interpreter of the system's running a script of the work folder.
        lambda work: {"mcp_servers": stdio("/bin/sh", str(planted(work)))},
        lambda work: {"mcp_servers": stdio("sh", "evil.sh", cwd=str(planted(work).parent))},
        # A bare name found first in a folder of PATH that is a work folder.
        lambda work: {"mcp_servers": stdio("evil.sh", env={"PATH": f"{work}:/usr/bin:/bin"})},
    ],
)
def test_a_program_an_agent_could_have_written_is_refused_at_save(http, usr_dir, change):
    work = usr_dir / "workdir"
    refused = http.post("/api/settings", json=change(work))
    assert refused.status_code == 400, refused.json
    assert "could have written" in refused.json["error"]
    assert stored(usr_dir) == {}  # nothing saved
    assert not (work / "RAN").exists()


def test_a_link_elsewhere_to_a_program_in_usr_is_refused_and_a_system_program_taken(
    http, usr_dir, tmp_path
):
    link = tmp_path / "bin" / "chromium"
    link.parent.mkdir()
    link.symlink_to(planted(usr_dir / "skills"))
    refused = http.post("/api/settings", json={"browser_executable": str(link)})
    assert refused.status_code == 400 and "usr/" in refused.json["error"]
    # A link in the work folder to a program of the system: the link itself could change.
    there = usr_dir / "workdir" / "true"
    there.parent.mkdir()
    there.symlink_to("/bin/true")
    assert http.post("/api/settings", json={"code_exec_bwrap": str(there)}).status_code == 400
    change = {"code_exec_bwrap": "/usr/bin/true", "mcp_servers": stdio("sh", "-c", "exit 0")}
    taken = http.post("/api/settings", json=change)
    assert taken.status_code == 200, taken.json
    assert stored(usr_dir)["code_exec_bwrap"] == "/usr/bin/true"


def test_the_work_folder_of_any_project_is_refused_as_a_programs_place(http, usr_dir, tmp_path):
    mine = tmp_path / "theirs"
    assert http.post("/api/projects", json={"name": "p", "work_dir": str(planted(mine).parent)}
                     ).status_code == 201  # fmt: skip
    refused = http.post("/api/settings", json={"code_exec_bwrap": str(mine / "evil.sh")})
    assert refused.status_code == 400 and "work folder" in refused.json["error"]
    # Moving the work folder onto the program's folder is refused as well.
    bwrap = planted(tmp_path / "tools", "bwrap")
    assert http.post("/api/settings", json={"code_exec_bwrap": str(bwrap)}).status_code == 200
    moved = http.post("/api/settings", json={"work_dir": str(bwrap.parent)})
    assert moved.status_code == 400 and "code_exec_bwrap" in moved.json["error"]


def test_the_mcp_check_of_the_page_says_so_as_the_user_types(http, usr_dir):
    text = stdio(str(planted(usr_dir / "workdir")))
    checked = http.post("/api/mcp/validate", json={"text": text})
    assert checked.json["ok"] is False and "could have written" in checked.json["error"]


# -- the password, when a login is set --------------------------------------------------


@pytest.fixture
def locked(server, usr_dir):
    """The page's client of a Cadre with a login, logged in."""
    (usr_dir / "settings.json").write_text(json.dumps(
        {"auth_login": "ada", "auth_password": auth.hash_password(PASSWORD)}))  # fmt: skip
    client = server.app.test_client()
    token = client.get("/api/csrf").json["token"]
    client.environ_base["HTTP_X_CSRF_TOKEN"] = token
    assert client.post("/login", json={"login": "ada", "password": PASSWORD}).status_code == 200
    client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
    return client


def with_password(password: str) -> dict[str, str]:
    return {"X-Cadre-Password": quote(password)}


def test_a_program_setting_needs_the_password_when_a_login_is_set(locked, usr_dir, caplog):
    change = {"browser_executable": "/usr/bin/chromium", "budget_calls": 7}
    asked = locked.post("/api/settings", json=change)
    assert asked.status_code == 403
    assert asked.json["error"] == "enter your password to change browser_executable"
    assert asked.json["password_required"] == ["browser_executable"]
    wrong = locked.post("/api/settings", json=change, headers=with_password("guess"))
    assert wrong.status_code == 403 and "wrong password" in wrong.json["error"]
    assert "browser_executable" not in stored(usr_dir) and "budget_calls" not in stored(usr_dir)
    assert "wrong password" in caplog.text
    saved = locked.post("/api/settings", json=change, headers=with_password(PASSWORD))
    assert saved.status_code == 200, saved.json
    assert stored(usr_dir)["browser_executable"] == "/usr/bin/chromium"
    # Other settings, and a server taken out, need none.
    assert locked.post("/api/settings", json={"budget_calls": 8}).status_code == 200
    mcp = {"mcp_servers": stdio("sh", "-c", "exit 0", disabled=True)}
    assert locked.post("/api/settings", json=mcp).status_code == 200  # disabled: nothing runs
    enabled = locked.post("/api/settings", json={"mcp_servers": stdio("sh", "-c", "exit 0")})
    assert enabled.status_code == 403 and enabled.json["password_required"] == ["mcp_servers"]
    assert locked.post("/api/settings", json={"mcp_servers": ""}).status_code == 200
    sandbox = locked.post("/api/settings", json={"code_exec_sandbox": "none"})
    assert sandbox.status_code == 403 and "code_exec_sandbox" in sandbox.json["error"]


def test_wrong_passwords_count_in_the_login_throttle(locked, server, usr_dir):
    change = {"code_exec_bwrap": "/usr/bin/bwrap"}
    for _ in range(MAX_ATTEMPTS):
        assert locked.post("/api/settings", json=change,
                           headers=with_password("guess")).status_code == 403  # fmt: skip
    throttled = locked.post("/api/settings", json=change, headers=with_password(PASSWORD))
    assert throttled.status_code == 429 and "try again in" in throttled.json["error"]
    # The login itself is throttled for the account as well.
    other = server.app.test_client()
    other.environ_base["HTTP_X_CSRF_TOKEN"] = other.get("/api/csrf").json["token"]
    assert other.post("/login", json={"login": "ada", "password": PASSWORD}).status_code == 429
    assert "code_exec_bwrap" not in stored(usr_dir)


def test_the_setup_dialog_needs_the_password_for_a_model_file(locked, usr_dir, tmp_path):
    model = tmp_path / "models" / "mine.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF" + b"\0" * 64)
    choice = {"provider": "local", "path": str(model), "force": True}
    asked = locked.post("/api/setup/save", json=choice)
    assert asked.status_code == 403 and asked.json["password_required"] == ["local_model_path"]
    saved = locked.post("/api/setup/save", json=choice, headers=with_password(PASSWORD))
    assert saved.status_code == 200, saved.json
    assert stored(usr_dir)["local_model_path"] == str(model)
    inside = planted(usr_dir / "workdir", "agent.gguf")
    refused = locked.post("/api/setup/save", json={**choice, "path": str(inside)},
                          headers=with_password(PASSWORD))  # fmt: skip
    assert refused.status_code == 400 and "could have written" in refused.json["error"]


# -- the routes that take an API key ------------------------------------------------------


def test_no_route_that_takes_an_api_key_changes_a_program_setting(http, llm, usr_dir,
                                                                  monkeypatch):  # fmt: skip
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    llm.add_rule(model_is("chat-model"), Reply(answer("ok")))
    llm.add_rule(model_is("util-model"), Reply("A name"))
    program = str(planted(usr_dir / "workdir"))
    fields = {"code_exec_bwrap": program, "browser_executable": program,
              "local_model_path": program, "code_exec_sandbox": "none",
              "mcp_servers": stdio(program)}  # fmt: skip
    api = http.application.test_client()  # no page session, no CSRF token: a program's client
    # The page's route does not take the key in place of a page's session and token.
    assert api.post("/api/settings", json=fields, headers=KEY).status_code == 403
    answers = [
        api.post("/api/v1/message", json={"message": "hi", **fields}, headers=KEY),
        api.post("/api/v1/projects", json={"name": "p", **fields}, headers=KEY),
        api.patch("/api/v1/projects/p", json=fields, headers=KEY),
        api.post("/api/v1/tasks", json={"name": "t", "prompt": "p", "kind": "planned",
                                        "at": ["2099-01-01T00:00:00Z"], **fields}, headers=KEY),
        api.post("/api_message", json={"message": "hi", **fields}, headers=KEY),
        api.post("/v1/chat/completions", json={"model": "cadre", "messages": [
            {"role": "user", "content": "hi"}], **fields}, headers=KEY),
    ]  # fmt: skip
    assert [a.status_code for a in answers] == [200, 201, 200, 400, 200, 200]
    settings = load_settings()
    assert settings.code_exec_bwrap == "bwrap" and settings.browser_executable == ""
    assert settings.local_model_path == "" and settings.mcp_servers == ""
    assert settings.code_exec_sandbox == "auto" and "code_exec_bwrap" not in stored(usr_dir)
    project = usr_dir / "projects" / "p" / "settings.json"
    assert not project.exists() or program not in project.read_text()


async def test_the_mcp_endpoint_offers_no_tool_that_changes_settings(server):
    """/mcp (its own API-key check) serves these tools: none takes a setting."""
    from server.apis.mcp_server.tools import build_mcp_server

    tools = await build_mcp_server(server.app.extensions["cadre.chats"]).list_tools()
    assert {tool.name for tool in tools} == {"send_message", "list_chats", "get_chat",
                                             "stop_chat"}  # fmt: skip
    words = json.dumps([tool.input_schema for tool in tools])
    for field in ("code_exec", "browser_executable", "mcp_servers", "local_model", "setting"):
        assert field not in words


def test_a_program_setting_from_the_environment_is_still_checked_when_used(usr_dir, monkeypatch):
    """CADRE_CODE_EXEC_BWRAP is the operator's choice; the host still never runs a program
    an agent could have written: the sandbox refuses to start (sandbox_choice)."""
    from execution import sandbox_choice

    program = planted(usr_dir / "workdir", "bwrap")
    monkeypatch.setenv("CADRE_CODE_EXEC_BWRAP", str(program))
    choice = sandbox_choice.choose(load_settings())
    assert "could have written" in choice.broken and "CADRE_CODE_EXEC_BWRAP" in choice.broken
    assert not choice.confined and not (program.parent / "RAN").exists()
    assert os.environ["CADRE_CODE_EXEC_BWRAP"] == str(program)


def test_a_restore_needs_the_password_when_a_login_is_set(locked, usr_dir):
    """A backup brings settings (the programs the host runs), profiles' tools and chats'
    own settings: a session taken over restored one of its making without a word."""
    backup = locked.post("/api/backup", json={"parts": ["settings"]})
    assert backup.status_code == 200
    preview = locked.post("/api/backup/preview", content_type="multipart/form-data",
                          data={"archive": (io.BytesIO(backup.data), "b.zip")})  # fmt: skip
    token = preview.json["token"]
    asked = locked.post("/api/backup/restore", json={"token": token})
    assert asked.status_code == 403 and asked.json["password_required"]
    assert "enter your password" in asked.json["error"]
    wrong = locked.post("/api/backup/restore", json={"token": token},
                        headers=with_password("guess"))  # fmt: skip
    assert wrong.status_code == 403 and "wrong password" in wrong.json["error"]
    done = locked.post("/api/backup/restore", json={"token": token},
                       headers=with_password(PASSWORD))  # fmt: skip
    assert done.status_code == 200 and done.json["restored"] == ["settings"]


@pytest.mark.parametrize(
    "text", ["[" * 100_000 + "]" * 100_000, '{"work_dir": "~no-such-user-of-cadre/work"}']
)
def test_a_project_whose_settings_cannot_be_read_costs_no_program_check(http, usr_dir, text):
    """Every program check reads the projects' named work folders: a project's settings.json
    nested too deeply for Python's parser, or naming the home of no user (both by hand), is
    skipped there as its project skips it (refused at use), not a RecursionError or
    RuntimeError that made every settings save a 500."""
    project = usr_dir / "projects" / "p"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(text)
    saved = http.post("/api/settings", json={"code_exec_bwrap": "bwrap"})
    assert saved.status_code == 200, saved.json
    assert http.post("/api/settings", json={"browser_executable": "/bin/true"}).status_code == 200
