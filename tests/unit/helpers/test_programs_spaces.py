"""Where agents can write, with people (issue 35): a project of anyone's space that names a
work folder of its own (an admin other than the first may name one) is such a place, so the
host runs no program from there."""

from __future__ import annotations

import json

from helpers.programs import places


def test_a_named_work_folder_of_another_spaces_project_is_a_place_agents_write(usr_dir, tmp_path):
    named = tmp_path / "admin-two-tools"
    project = usr_dir / "users" / "admin2" / "projects" / "ops"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(json.dumps({"work_dir": str(named)}))
    assert dict(places())[named.resolve()] == "project ops's work folder"
