"""Projects on disk: the work folder a user names (an existing folder of theirs, never
Cadre's), secrets changed by name, and changes that never lose what was there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.errors import UserError
from helpers.files import BASE_DIR
from profiles.project_store import create_project, update_project
from profiles.projects import load_project_secrets, project_overrides, work_folder
from profiles.work_folder import check_work_folder


def test_an_existing_folder_of_the_user_is_taken_resolved(tmp_path):
    (tmp_path / "code").mkdir()
    assert check_work_folder(f"{tmp_path}/code/../code ") == str((tmp_path / "code").resolve())
    assert check_work_folder("  ") == ""


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        (lambda tmp, usr: "relative/folder", "full path"),
        (lambda tmp, usr: str(tmp / "missing"), "does not exist"),
        (lambda tmp, usr: str(tmp / "file.txt"), "is not a folder"),
        (lambda tmp, usr: str(BASE_DIR / "prompts"), "inside Cadre's own folder"),
        (lambda tmp, usr: str(usr / "chats"), "inside usr/"),
        (lambda tmp, usr: str(usr / "projects"), "inside usr/"),
        # A project's folder holds its settings.json and secrets.json: agents working there
        # (in the sandbox too) could read the secrets and rename their own work folder.
        # Only a project's work/ folder is taken, the project's own or another's.
        (lambda tmp, usr: str(usr / "projects" / "other"), "project's own settings"),
        (lambda tmp, usr: str(usr / "projects" / "other" / "agents"), "project's own settings"),
        (lambda tmp, usr: str(usr / "projects" / "alpha"), "project's own settings"),
        (lambda tmp, usr: str(usr / "projects" / "alpha" / "knowledge"), "project's own settings"),
        (lambda tmp, usr: "/", "root of the file system"),
        # The file system refuses these names: was a 500 (ValueError, OSError).
        (lambda tmp, usr: f"{tmp}/a\x00b", "cannot be a folder"),
        (lambda tmp, usr: "/" + "a" * 4000, "cannot be a folder"),
        (lambda tmp, usr: str(usr.parent), "holds usr/"),
    ],
)
def test_a_folder_that_cannot_be_a_work_folder_says_why(tmp_path, usr_dir, where, reason):
    (tmp_path / "file.txt").write_text("x")
    (usr_dir / "chats").mkdir(parents=True, exist_ok=True)
    (usr_dir / "projects" / "other" / "agents").mkdir(parents=True, exist_ok=True)
    (usr_dir / "projects" / "alpha" / "knowledge").mkdir(parents=True, exist_ok=True)
    with pytest.raises(UserError, match=reason):
        check_work_folder(where(tmp_path, usr_dir))


@pytest.mark.parametrize("area", ["_knowledge", "_knowledge-other"])
def test_a_projects_memory_area_is_never_a_knowledge_index(usr_dir, area):
    """Those areas hold the knowledge files' index (memory/memories.py): the project's
    memories would go into it, hidden from the Memory panel and rebuilt away."""
    with pytest.raises(UserError, match="memory_area"):
        create_project("alpha", {"memory_area": area})
    assert not (usr_dir / "projects" / "alpha").exists()


def test_another_projects_work_folder_may_be_shared(usr_dir):
    shared = usr_dir / "projects" / "other" / "work" / "src"
    shared.mkdir(parents=True)
    assert check_work_folder(str(shared)) == str(shared.resolve())
    assert check_work_folder(str(shared.parent)) == str(shared.parent.resolve())


def test_a_refused_project_writes_nothing_and_secrets_change_by_name(tmp_path, usr_dir):
    with pytest.raises(UserError, match="does not exist"):
        create_project("alpha", {"work_dir": str(tmp_path / "missing")})
    assert not (usr_dir / "projects" / "alpha").exists()
    create_project("alpha", {"memory_area": "shared"}, {"TOKEN": "one", "OLD": "x"})
    update_project("alpha", {"description": "d"}, {"TOKEN": "two", "OLD": None})
    assert load_project_secrets("alpha") == {"TOKEN": "two"}
    mode = (usr_dir / "projects" / "alpha" / "secrets.json").stat().st_mode & 0o777
    assert mode == 0o600
    overrides = project_overrides("alpha", {"TOKEN": "global", "OTHER": "kept"})
    assert overrides == {
        "work_dir": str(usr_dir / "projects" / "alpha" / "work"),
        "memory_area": "shared",
        "secrets": {"TOKEN": "two", "OTHER": "kept"},
    }
    with pytest.raises(UserError, match="secret name"):
        update_project("alpha", {}, {"bad name": "v"})


def test_a_hand_edited_work_folder_is_refused_where_it_is_used_never_replaced(usr_dir, caplog):
    """A folder that cannot be one is given as it is and refused at each use with the
    reason (helpers/folders.py `work_dir`): were the project's own folder used instead,
    files would land where nobody looks, without a word. A folder that is gone is the
    exception: the project's own is used, and the log says so."""
    from helpers.folders import work_dir

    create_project("alpha", {})
    (usr_dir / "projects" / "alpha" / "settings.json").write_text('{"work_dir": "/"}')
    assert work_folder("alpha") == Path("/")
    with pytest.raises(UserError, match="root of the file system"):
        work_dir(project_overrides("alpha", {})["work_dir"])
    (usr_dir / "projects" / "alpha" / "settings.json").write_text('{"work_dir": "/gone/away"}')
    assert work_folder("alpha") == usr_dir / "projects" / "alpha" / "work"
    assert "does not exist" in caplog.text


def test_a_hand_edited_work_folder_the_system_cannot_look_at_is_refused_where_used(usr_dir):
    """A name too long to be looked at (ENAMETOOLONG, an OSError) was an error out of the
    project's listing and of every chat of the project; it is given as it is, and refused
    with the reason where agents use it, as any other folder that cannot be one."""
    from helpers.folders import work_dir
    from profiles.project_store import describe

    create_project("alpha", {})
    named = "/tmp/" + "a" * 300
    (usr_dir / "projects" / "alpha" / "settings.json").write_text(json.dumps({"work_dir": named}))
    assert describe("alpha").work_folder == named
    with pytest.raises(UserError, match="File name too long"):
        work_dir(project_overrides("alpha", {})["work_dir"])


def test_a_change_never_writes_over_what_it_could_not_read(usr_dir):
    create_project("alpha", {"instructions": "Keep me."}, {"TOKEN": "one"})
    folder = usr_dir / "projects" / "alpha"
    (folder / "settings.json").write_text('{"instructions": "Keep me.", "color": "red", ')
    with pytest.raises(UserError, match="cannot be read"):
        update_project("alpha", {"description": "d"})
    assert (folder / "settings.json").read_text().endswith('"color": "red", ')
    (folder / "settings.json").write_text('{"instructions": "Keep me.", "color": "red"}')
    (folder / "secrets.json").write_text("TOKEN=one")  # not JSON
    with pytest.raises(UserError, match="secrets"):
        update_project("alpha", {"description": "d"})
    assert (folder / "secrets.json").read_text() == "TOKEN=one"
    (folder / "secrets.json").write_text('{"TOKEN": "one"}')
    update_project("alpha", {"description": "d"})
    saved = json.loads((folder / "settings.json").read_text())
    assert saved["color"] == "red" and saved["instructions"] == "Keep me."  # another tool's key
    assert load_project_secrets("alpha") == {"TOKEN": "one"}


def test_a_projects_agent_profile_is_a_profile_name(usr_dir, caplog):
    """A hand-edited (or restored) '../../etc' would be every new chat's profile there."""
    from profiles.projects import load_project_settings

    with pytest.raises(UserError, match="not a profile name"):
        create_project("alpha", {"agent_profile": "../../etc"})
    create_project("alpha", {"agent_profile": "researcher"})
    (usr_dir / "projects" / "alpha" / "settings.json").write_text('{"agent_profile": "../x"}')
    assert load_project_settings("alpha").agent_profile == ""  # damaged: defaults, and said
    assert "damaged" in caplog.text
