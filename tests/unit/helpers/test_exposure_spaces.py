"""The work-folder rule with people (issue 35): each person's own work folder and projects'
work folders (in their space, accounts/spaces.py) are their agents' own; another person's,
and the rest of usr/, are refused, when saved and at every use."""

from __future__ import annotations

import pytest

from helpers.errors import UserError
from helpers.exposure import problem, saved_work_folder
from helpers.folders import knowledge_dir, work_dir


def test_a_persons_own_folders_are_their_agents_alone(usr_dir):
    usr = usr_dir.resolve()
    ann, bea = usr / "users" / "ann", usr / "users" / "bea"
    for own in (ann / "workdir", ann / "workdir" / "site", ann / "projects" / "trip" / "work"):
        assert problem(own, ann) == ""
        assert problem(own, bea) == "is inside usr/"  # another person's
        assert problem(own) == "is inside usr/"  # the first admin's agents: not theirs either
    assert problem(usr / "workdir", ann) == "is inside usr/"  # the first admin's folder
    assert problem(usr / "projects" / "trip" / "work", ann) == "is inside usr/"
    assert problem(ann / "memory", ann) == "is inside usr/"  # the rest of one's own space
    assert problem(ann, ann) == "is inside usr/"
    assert "project's own settings" in problem(ann / "projects" / "trip", ann)
    # usr/'s own, as before accounts (the desktop mode, the first admin).
    assert problem(usr / "workdir") == "" and problem(usr / "projects" / "p" / "work") == ""


def test_at_use_a_work_folder_is_the_owners_or_refused(usr_dir):
    ann, bea = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    (ann / "workdir").mkdir(parents=True)
    assert work_dir("", ann) == (ann / "workdir").resolve()
    assert work_dir(str(ann / "workdir"), ann) == (ann / "workdir").resolve()
    assert work_dir("") == (usr_dir / "workdir").resolve()  # usr/'s, as always
    with pytest.raises(UserError) as refused:
        work_dir(str(ann / "workdir"), bea)
    assert "is inside usr/: agents cannot work there" in str(refused.value)
    with pytest.raises(UserError):
        saved_work_folder(str(ann / "workdir"), space=bea)
    assert saved_work_folder(str(ann / "workdir"), space=ann) == str((ann / "workdir").resolve())


def test_knowledge_is_in_the_owners_space(usr_dir):
    ann = usr_dir / "users" / "ann"
    assert knowledge_dir(None, ann) == ann / "knowledge"
    assert knowledge_dir("trip", ann) == ann / "projects" / "trip" / "knowledge"
    assert knowledge_dir() == usr_dir / "knowledge"
