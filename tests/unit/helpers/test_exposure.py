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
    with pytest.raises(UserError, match="is a link now"):
        work_dir(str(mine))
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
