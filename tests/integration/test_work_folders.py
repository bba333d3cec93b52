"""A work folder never exposes Cadre or the system: checked by its real path when it is
saved (the `work_dir` setting, a project's folder) and at every use (the file panel,
text_editor, a command), so a folder swapped for a link after saving is refused, not
followed. Real folders, real links, the real Flask app and the agents' loop."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from core.agent_types import UserMessage
from helpers.files import BASE_DIR
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply

ROOTS_HOME = pwd.getpwuid(0).pw_dir

#: Folders no work folder may be, with a word of the reason given.
REFUSED = [
    ("/", "system"),
    ("/etc", "system"),
    ("/etc/ssl", "system"),
    ("/proc/self", "system"),
    ("/sys", "system"),
    ("/dev/shm", "system"),
    ("/boot", "system"),
    ("/usr/local", "system"),
    ("/var", "system"),
    ("/var/spool", "system"),
    ("/bin", "system"),
    ("/lib", "system"),
    ("/run", "system"),
    (ROOTS_HOME, "home folder"),
    (f"{ROOTS_HOME}/.ssh", "home folder"),
    (str(BASE_DIR), "Cadre's own folder"),
]


def existing(folders: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(path, why) for path, why in folders if os.path.isdir(path)]


def stored(usr_dir: Path) -> dict:
    path = usr_dir / "settings.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize(("folder", "why"), existing(REFUSED))
def test_the_work_dir_setting_is_checked_when_saved(http, usr_dir, folder, why):
    refused = http.post("/api/settings", json={"work_dir": folder})
    assert refused.status_code == 400, refused.json
    assert refused.json["error"].startswith("work_dir: ") and why in refused.json["error"]
    assert "work_dir" not in stored(usr_dir)


@pytest.mark.parametrize(("folder", "why"), existing(REFUSED))
def test_a_projects_work_folder_is_checked_when_saved(http, usr_dir, folder, why):
    refused = http.post("/api/projects", json={"name": "p", "work_dir": folder})
    assert refused.status_code == 400, refused.json
    assert why in refused.json["error"]
    assert not (usr_dir / "projects" / "p").exists()


def test_usr_and_folders_around_it_are_refused_and_a_folder_of_ones_own_stored_real(
    http, usr_dir, tmp_path
):
    (usr_dir / "chats").mkdir()
    for folder, why in [(usr_dir, "usr/"), (usr_dir / "chats", "usr/"), (tmp_path, "holds usr/")]:
        refused = http.post("/api/settings", json={"work_dir": str(folder)})
        assert refused.status_code == 400 and why in refused.json["error"], refused.json
    relative = http.post("/api/settings", json={"work_dir": "work"})
    assert relative.status_code == 400 and "full path" in relative.json["error"]
    mine = tmp_path / "mine"
    mine.mkdir()
    link = tmp_path / "link"
    link.symlink_to(mine)
    saved = http.post("/api/settings", json={"work_dir": f"{link}/"})
    assert saved.status_code == 200 and stored(usr_dir)["work_dir"] == str(mine)
    assert http.post("/api/settings", json={"work_dir": ""}).status_code == 200  # usr/workdir


# -- at use ---------------------------------------------------------------------------------


def test_a_project_folder_of_proc_self_never_shows_cadres_environment(http, sio, usr_dir):
    """What was seen: stored as /proc/<Cadre's pid> (a restore, or a settings.json written
    by hand), the file panel's raw route sent Cadre's environment, keys and all."""
    os.environ["CADRE_PROBE_SECRET"] = "sk-never-shown"
    try:
        folder = usr_dir / "projects" / "p"
        (folder / "work").mkdir(parents=True)
        (folder / "settings.json").write_text(json.dumps({"work_dir": f"/proc/{os.getpid()}"}))
        chat = sio.emit("chat:new", {"project": "p"}, callback=True)["chat"]
        raw = http.get("/api/files/raw", query_string={"path": "environ", "chat": chat["id"]})
        listed = http.get("/api/files/list", query_string={"chat": chat["id"]})
    finally:
        del os.environ["CADRE_PROBE_SECRET"]
    assert raw.status_code == 400 and b"sk-never-shown" not in raw.data
    assert "system folder" in raw.json["error"] and "project" in raw.json["error"]
    assert listed.status_code == 400


def test_a_work_folder_swapped_for_a_link_after_saving_is_refused_not_followed(
    http, usr_dir, tmp_path
):
    mine = tmp_path / "mine"
    mine.mkdir()
    assert http.post("/api/settings", json={"work_dir": str(mine)}).status_code == 200
    (usr_dir / "secret_key").write_text("never listed")
    mine.rmdir()
    mine.symlink_to(usr_dir)  # swapped after saving
    listed = http.get("/api/files/list")
    assert listed.status_code == 400 and "link" in listed.json["error"]
    assert "secret_key" not in json.dumps(listed.json)
    mine.unlink()
    mine.symlink_to("/etc")
    upload = http.post("/api/files/folder", json={"path": "cadre-probe"})
    assert upload.status_code == 400 and not Path("/etc/cadre-probe").exists()


def test_text_editor_refuses_a_work_folder_holding_usr_and_the_chat_says_why(
    make_context, llm, usr_dir, tmp_path
):
    """What was seen: with a work_dir holding usr/, text_editor read another chat's
    chat.json and wrote a tool into usr/agents/ that Cadre then ran."""
    other = usr_dir / "chats" / "other" / "chat.json"
    other.parent.mkdir(parents=True)
    other.write_text('{"secret": "another chat"}')
    tool = "usr/agents/agent0/tools/probe_tool.py"
    llm.script(
        Reply(reply("text_editor:read", path="usr/chats/other/chat.json")),
        Reply(reply("text_editor:write", path=tool, content="print('ran')\n")),
        Reply(answer("done")),
    )
    context = make_context(work_dir=str(tmp_path))  # tmp_path holds usr/
    with pytest.raises(Exception, match="holds usr/"):
        context.communicate(UserMessage("look around")).result(30)
    shown = [item for item in context.log.items if item.type == "error"]
    assert shown and "holds usr/" in shown[-1].content and "work_dir" in shown[-1].content
    assert "another chat" not in json.dumps([item.content for item in context.log.items])
    assert not (usr_dir / "agents" / "agent0" / "tools" / "probe_tool.py").exists()


def test_a_command_refuses_a_work_folder_in_etc(make_context, llm, usr_dir):
    """What was seen: with /etc as a project's folder, a command created files in the
    host's /etc as root. Unsandboxed too: a work folder never is a system folder."""
    probe = Path("/etc/cadre-probe-file")
    llm.script(Reply(reply("code_execution_tool", runtime="terminal", code=f"touch {probe}")),
               Reply(answer("done")))  # fmt: skip
    context = make_context(work_dir="/etc", code_exec_sandbox="none")
    try:
        with pytest.raises(Exception, match="system folder"):
            context.communicate(UserMessage("make a file")).result(30)
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)


def test_a_folder_of_a_user_that_does_not_exist_is_a_400_at_save_and_refused_at_use(http):
    """`~name` of no such user cannot be a path: pathlib raises RuntimeError there, which
    made the settings save and the project's creation a 500, and every tool's use an
    error that was not the person's to read."""
    from helpers.errors import UserError
    from helpers.folders import work_dir

    folder = "~no-such-user-of-cadre/work"
    for route, change in (("/api/settings", {"work_dir": folder}),
                          ("/api/projects", {"name": "p", "work_dir": folder})):  # fmt: skip
        refused = http.post(route, json=change)
        assert refused.status_code == 400, refused.json
        assert "~no-such-user-of-cadre" in refused.json["error"]
    with pytest.raises(UserError, match="no-such-user"):
        work_dir(folder)
