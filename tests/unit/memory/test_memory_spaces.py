"""Each person's memory areas and knowledge index are in their space (issue 35): one
person's are never another's, and usr/'s (the desktop mode's, the first admin's) stay
where they were."""

from __future__ import annotations

import shutil

from helpers.settings import load_settings
from memory import knowledge, memories


def test_each_space_has_its_own_areas(usr_dir):
    ann, bea = usr_dir / "users" / "ann", usr_dir / "users" / "bea"
    settings = load_settings()
    mine = memories.open_area(settings, ann)
    assert mine.path == ann / "memory" / "default" / "memory.db"
    mine.save("Ann parks on level three")
    assert memories.areas(ann) == ["default"]
    assert memories.areas(bea) == [] and memories.areas() == []
    assert memories.open_area(settings, bea).search("level three") == []
    assert memories.open_area(settings).path == usr_dir / "memory" / "default" / "memory.db"


def test_each_space_has_its_own_knowledge(usr_dir):
    ann = usr_dir / "users" / "ann"
    (ann / "knowledge").mkdir(parents=True)
    (ann / "knowledge" / "cats.md").write_text("Ann's cat is called Pepper.")
    (usr_dir / "knowledge").mkdir()
    (usr_dir / "knowledge" / "dogs.md").write_text("The first admin's dog is called Rex.")
    anns = memories.knowledge_store(None, ann)
    assert anns.path == ann / "memory" / "_knowledge" / "memory.db"
    assert knowledge.refresh(anns, None, ann) == 1
    theirs = memories.knowledge_store()
    assert knowledge.refresh(theirs) == 1
    assert [m.text for m in anns.search("Pepper")] == ["Ann's cat is called Pepper."]
    assert anns.search("Rex") == [] and theirs.search("Pepper") == []
    assert memories.areas(ann) == []  # an index is no memory area


def test_a_space_removed_and_made_again_starts_with_an_empty_memory(usr_dir):
    """A deleted user's folder goes (accounts/service.py `retire_space`); a user of that name
    made later has a fresh space: their area opens again, empty, not the store of a gone
    file ("unable to open database file")."""
    ann = usr_dir / "users" / "ann"
    memories.open_area(load_settings(), ann).save("Ann's first note")
    shutil.rmtree(ann)
    again = memories.open_area(load_settings(), ann)
    assert again.count() == 0
    again.save("Ann's note, again")
    assert [m.text for m in again.all()] == ["Ann's note, again"]
