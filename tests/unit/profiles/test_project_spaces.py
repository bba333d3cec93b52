"""Projects in each person's space (issue 35): two people may each have a project of one
name, each found where it lives (`ProjectRef`), with its own settings, folders and
profiles; a bare name is usr/'s, as before accounts."""

from __future__ import annotations

import pytest

from helpers.errors import NotFound, UserError
from profiles.catalog import get_available_agents_dict
from profiles.project_store import create_project, delete_project, describe, list_projects
from profiles.projects import ProjectRef, load_project_settings, project_exists


def test_two_people_each_have_their_own_project_of_one_name(usr_dir):
    ann = ProjectRef("trip", usr_dir / "users" / "ann")
    bea = ProjectRef("trip", usr_dir / "users" / "bea")
    create_project(ann, {"instructions": "Answer in French."})
    create_project(bea, {"instructions": "Answer in German."})
    with pytest.raises(UserError, match="exists already"):
        create_project(ann, {})
    assert [p.settings.instructions for p in list_projects(ann.space)] == ["Answer in French."]
    assert load_project_settings(bea).instructions == "Answer in German."
    assert list_projects() == [] and not project_exists("trip")  # usr/ has none
    shown = describe(ann)
    assert shown.work_folder == str(ann.space / "projects" / "trip" / "work")
    assert shown.knowledge_folder == str(ann.space / "projects" / "trip" / "knowledge")
    assert (ann.space / "projects" / "trip" / "work").is_dir()
    delete_project(bea, 0)
    assert project_exists(ann) and not project_exists(bea)
    with pytest.raises(NotFound):
        describe(bea)


def test_a_projects_own_profiles_are_found_in_its_owners_space(usr_dir):
    ann = ProjectRef("trip", usr_dir / "users" / "ann")
    bea = ProjectRef("trip", usr_dir / "users" / "bea")
    for place in (ann, bea):
        create_project(place, {})
    guide = ann.space / "projects" / "trip" / "agents" / "guide"
    guide.mkdir(parents=True)
    (guide / "agent.yaml").write_text("title: Guide\ndescription: Ann's trip guide\n")
    assert "guide" in get_available_agents_dict(ann)
    assert "guide" not in get_available_agents_dict(bea)
    assert "guide" not in get_available_agents_dict()


def test_a_project_cannot_work_in_another_persons_folder(usr_dir):
    ann, bea = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    (ann / "workdir").mkdir(parents=True)
    with pytest.raises(UserError, match="is inside usr/"):
        create_project(ProjectRef("trip", bea), {"work_dir": str(ann / "workdir")})
    assert not project_exists(ProjectRef("trip", bea))
