"""The work-folder rule (helpers/exposure.py) on real folders: system folders and their
insides, home folders and their hidden folders, Cadre's own; at use, a folder that has
become a link is refused, not followed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers.errors import UserError
from helpers.exposure import checked_work_folder, problem, saved_work_folder
from helpers.folders import work_dir
from helpers.outbound import OutboundPolicy, policy
from helpers.settings import Settings


@pytest.mark.parametrize(
    ("folder", "why"),
    [
        ("/", "root of the file system"),
        ("/etc", "is the system folder /etc"),
        ("/etc/x/y", "is inside the system folder /etc"),
        ("/proc/self", "/proc"),  # read as /proc/<pid>
        ("/dev/shm", "/dev"),
        ("/lib64/x", "system folder"),  # /usr/lib64 where /lib64 is a link to it
        ("/var/spool/cron", "/var"),
        ("/home", "holds"),
        (str(Path.home()), "home folder"),
        (str(Path.home() / ".ssh"), "hidden folder"),
        (str(Path.home() / ".local" / "bin"), "hidden folder"),
        (sys.prefix, "Cadre's"),
    ],
)
def test_folders_that_are_never_work_folders(folder, why):
    assert why in problem(Path(folder).resolve())


def test_the_system_folders_are_every_lib_and_hidden_folders_are_named(usr_dir):
    """/lib* is the system's even where it is no link into /usr (a path as the rule reads it,
    resolved already); a refusal names the hidden folder and a project's own folder."""
    assert problem(Path("/lib32/x")) == "is inside the system folder /lib32"
    assert problem(Path("/libexec")) == "is the system folder /libexec"
    home = Path.home().resolve()
    assert problem(home / ".ssh" / "keys").startswith(
        f"is inside {home / '.ssh'}, a hidden folder of "
    )
    assert problem(usr_dir.resolve() / "projects" / "p") == (
        "holds or is among a project's own settings and secrets (a project's 'work' folder"
        " may be used)"
    )


def test_saving_a_work_folder_checks_it_and_says_why_not(tmp_path):
    (tmp_path / "file").write_text("x")
    for value, why in (
        ("/etc", "work folder '/etc' is the system folder /etc: choose a folder of your own"),
        ("relative/x", "work folder 'relative/x': give the full path (from /)"),
        (str(tmp_path / "missing"), f"work folder {str(tmp_path / 'missing')!r} does not exist"),
        (str(tmp_path / "file"), f"work folder {str(tmp_path / 'file')!r} is not a folder"),
        ("/tmp/a\x00b", "work folder '/tmp/a\\x00b' cannot be a folder: embedded null byte"),
        ("~no-such-user-here/x", "work folder '~no-such-user-here/x': its '~' names no user of"
         " this machine; give the full path (from /)"),
    ):  # fmt: skip
        with pytest.raises(UserError) as refused:
            saved_work_folder(value)
        assert str(refused.value) == why
    (tmp_path / "mine").mkdir()
    assert saved_work_folder(str(tmp_path / "mine")) == str(tmp_path / "mine")
    assert saved_work_folder("  ") == ""


def test_a_folder_of_ones_own_may_be_one(tmp_path):
    assert problem(tmp_path / "mine") == ""
    assert "holds usr/" in problem(tmp_path)  # the test's usr/ is in it
    assert problem(Path.home().resolve() / "projects" / "x") == ""
    assert saved_work_folder(f"{tmp_path}/new/../new", must_exist=False) == str(tmp_path / "new")


def test_at_use_a_link_is_refused_and_the_rule_read_on_the_real_path(tmp_path, usr_dir):
    mine = tmp_path / "mine"
    mine.mkdir()
    assert checked_work_folder(mine) == mine.resolve()
    assert work_dir(str(mine)) == mine.resolve()
    assert work_dir("") == usr_dir / "workdir"  # usr/workdir is the agents' own
    mine.rmdir()
    mine.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UserError, match="is a link now") as refused:
        work_dir(str(mine))
    assert str(refused.value).endswith(
        "never given: make it a folder again, or set another work folder in Settings"
        " (work_dir), or in the project's settings if the chat belongs to a project"
    )
    (tmp_path / "via").symlink_to("/etc")
    with pytest.raises(UserError, match="system folder /etc"):
        work_dir(str(tmp_path / "via" / "ssl"))  # a folder inside a link: the real path


def test_the_outbound_policy_allows_no_file_url_when_the_work_folder_is_refused():
    refused = policy(Settings(work_dir="/etc"), loopback_only=True)
    assert refused.work_dir is None and refused == OutboundPolicy("auto", True, None)


def test_usr_workdir_is_the_agents_own_wherever_usr_lies(tmp_path, monkeypatch):
    """usr/ may lie in a hidden folder of a home (~/.local/share/cadre), or in /var/lib,
    where services keep their data: its workdir and a project's work folder are still the
    agents' own, not the home's or the system's (every tool was refused its default work
    folder)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    usr = tmp_path / "home" / ".local" / "share" / "cadre" / "usr"
    (usr / "projects" / "p" / "work").mkdir(parents=True)
    monkeypatch.setenv("CADRE_USR_DIR", str(usr))
    assert work_dir("") == usr / "workdir"
    assert problem(usr / "projects" / "p" / "work") == ""
    assert "hidden folder" in problem(usr / "chats")  # the rest stays refused
