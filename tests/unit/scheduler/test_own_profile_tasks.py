"""A member's scheduled task may give Agent 0 a profile of their own (in their space, issue
35), in a project or outside one; nobody else's task may name it."""

from __future__ import annotations

import pytest

from helpers.errors import UserError
from scheduler.tasks import TaskSpec, validated


def test_a_task_may_name_its_owners_own_profile_and_no_one_elses(usr_dir):
    ann, bea = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    scout = ann / "agents" / "scout"
    scout.mkdir(parents=True)
    (scout / "agent.yaml").write_text("title: Scout\ndescription: finds trails\n")
    (ann / "projects" / "trip").mkdir(parents=True)
    for project in ("", "trip"):
        spec = TaskSpec(name="n", prompt="p", kind="adhoc", profile="scout", project=project)
        assert validated(spec, ann).profile == "scout"
    for space in (bea, usr_dir, None):
        with pytest.raises(UserError, match="no available agent profile 'scout'"):
            validated(TaskSpec(name="n", prompt="p", kind="adhoc", profile="scout"), space)
