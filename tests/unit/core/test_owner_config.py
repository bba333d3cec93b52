"""A chat's configuration is its owner's (issue 35): the project of that name in their space,
and their own work folder, whether the chat is new, restored, given new settings, or has a
subordinate; the desktop mode and the first admin keep usr/'s, and the `work_dir` setting."""

from __future__ import annotations

from accounts.users import Users
from core import chat_record
from core.agent_config import agent_config, config_now
from core.chat_record import AgentRecord, ChatFile
from core.delegation.steps import new_subordinate
from initialize import new_chat
from profiles.project_store import create_project
from profiles.projects import ProjectRef


def people() -> None:
    users = Users()
    users.add("root", "admin", "the admin's password")  # the first admin: usr/ is theirs
    users.add("ann", "member", "ann's password")
    users.add("bea", "member", "bea's password")


def test_a_members_agents_work_in_their_own_folder_whatever_is_named(usr_dir, tmp_path,
                                                                      monkeypatch):  # fmt: skip
    people()
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("CADRE_WORK_DIR", str(shared))
    assert agent_config().settings.work_dir == str(shared)  # the desktop mode
    assert agent_config(owner="root").settings.work_dir == str(shared)  # the first admin
    anns = agent_config({"work_dir": str(shared)}, owner="ann").settings  # a chat names one
    assert anns.work_dir == str(usr_dir / "users" / "ann" / "workdir")


def test_a_chat_reads_its_owners_project_new_restored_and_below(usr_dir):
    people()
    create_project("trip", {"memory_area": "admins-trip"})  # the first admin's, in usr/
    ann = usr_dir / "users" / "ann"
    create_project(ProjectRef("trip", ann), {"agent_profile": "researcher"})
    own_work = str(ann / "projects" / "trip" / "work")

    assert agent_config(project="trip", owner="root").settings.memory_area == "admins-trip"
    made = new_chat(None, "trip", "ann")
    assert made.owner == "ann" and made.project_ref == ProjectRef("trip", ann)
    assert made.agent0.config.profile == "researcher"  # Ann's project names it
    assert made.agent0.ctx.settings.memory_area == "trip"
    assert made.agent0.ctx.settings.work_dir == own_work
    assert config_now(made).settings.work_dir == own_work  # new settings between runs
    below = new_subordinate(made.agent0, "")
    assert below.ctx.settings.work_dir == own_work and below.ctx.space == ann

    saved = ChatFile(id="c1", created_at=1.0, project="trip", owner="ann",
                     agents=[AgentRecord(number=0, profile="agent0")])  # fmt: skip
    restored = chat_record.restore(saved, None)
    assert restored.agent0.ctx.settings.work_dir == own_work
    assert restored.agent0.ctx.settings.memory_area == "trip"

    # Bea has no project of that name: none of Ann's or the admin's settings reach her.
    beas = new_chat(None, "trip", "bea").agent0.ctx.settings
    assert beas.memory_area == "default"
    assert beas.work_dir == str(usr_dir / "users" / "bea" / "workdir")
