"""Importing skills from a zip: what a skill holds arrives whole; a hostile zip changes nothing."""

from __future__ import annotations

import io
import os
import stat
import zipfile

import pytest

from profiles import skill_import, skills
from profiles.skill_import import ImportRefused, delete_user_skill, import_zip
from tests.support.skill_files import make_skill, skill_md, zip_bytes


def run_import(data: bytes, **options) -> skill_import.ImportResult:
    return import_zip(io.BytesIO(data), **options)


def installed(usr_dir) -> set[str]:
    """Everything in usr/skills/, hidden leftovers included."""
    folder = usr_dir / "skills"
    return set(os.listdir(folder)) if folder.exists() else set()


def test_a_zip_of_skill_folders_is_imported_and_offered(usr_dir):
    data = zip_bytes({
        "pack/sql-review/SKILL.md": skill_md("sql-review", "Review SQL. Use for queries."),
        "pack/sql-review/references/rules.md": "No SELECT *.",
        "pack/sql-review/scripts/lint.py": "print(1)",
        "pack/notes/SKILL.md": skill_md("notes", "Take notes."),
        "pack/README.md": "a pack of skills",
    })  # fmt: skip
    result = run_import(data)
    assert result.imported == ["notes", "sql-review"] and result.skipped == ["pack/README.md"]
    root = usr_dir / "skills" / "sql-review"
    assert (root / "references" / "rules.md").read_text() == "No SELECT *."
    assert installed(usr_dir) == {"notes", "sql-review"}  # no staging folder left behind
    found = skills.discover_skills()["sql-review"]
    assert found.usable and found.source == "user"


def test_a_skill_md_at_the_top_is_one_skill_named_by_its_front_matter(usr_dir):
    data = zip_bytes({"SKILL.md": skill_md("top-level", "At the top."), "tpl.md": "x"})
    assert run_import(data, fallback="download").imported == ["top-level"]
    assert (usr_dir / "skills" / "top-level" / "tpl.md").read_text() == "x"


def test_an_installed_name_is_replaced_only_when_asked(usr_dir):
    make_skill(usr_dir / "skills", "notes", "old", files={"old.txt": "old"})
    data = zip_bytes({"notes/SKILL.md": skill_md("notes", "new")})
    with pytest.raises(ImportRefused, match="already installed: notes"):
        run_import(data)
    assert (usr_dir / "skills" / "notes" / "old.txt").exists()
    assert run_import(data, replace=True).replaced == ["notes"]
    assert not (usr_dir / "skills" / "notes" / "old.txt").exists()
    assert skills.discover_skills()["notes"].description == "new"
    assert installed(usr_dir) == {"notes"}


def _link_entry() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("evil/SKILL.md", skill_md("evil", "evil"))
        link = zipfile.ZipInfo("evil/passwd")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    return buffer.getvalue()


HOSTILE = {
    "zip-slip": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "ok/../../evil.py": "x"}),
                 "goes up a folder with '..'"),
    "absolute": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "/tmp/evil.py": "x"}),
                 "is an absolute path"),
    "drive": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "C:/evil.py": "x"}),
              "is an absolute path"),
    "backslash": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "ok\\..\\..\\x": "x"}),
                  "contains a backslash"),
    "symlink": (_link_entry(), "is a symbolic link"),
    "bomb": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "ok/zeros.bin": b"\0" * 4_000_000}),
             "refused as a zip bomb"),
    "broken skill": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "bad/SKILL.md": "hi"}),
                     "bad/SKILL.md: SKILL.md must start with a front matter block"),
    "no skill": (zip_bytes({"readme.txt": "hello"}), "no SKILL.md found"),
    "not a zip": (b"PK\x03\x04 not really", "not a readable zip file"),
    "file and folder": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "ok/f": "x",
                                   "ok/f/g": "y"}), "'ok/f' is both a file and a folder"),
    "folder and file": (zip_bytes({"ok/SKILL.md": skill_md("ok", "fine"), "ok/f/g": "y",
                                   "ok/f": "x"}), "'ok/f' is both a file and a folder"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_or_broken_zip_is_refused_and_changes_nothing(usr_dir, tmp_path, case):
    make_skill(usr_dir / "skills", "ok", "the one installed before")
    data, says = HOSTILE[case]
    with pytest.raises(ImportRefused) as refused:
        run_import(data, replace=True)
    assert says in str(refused.value)
    assert installed(usr_dir) == {"ok"}  # nothing half-written, no staging left
    assert skills.discover_skills()["ok"].description == "the one installed before"
    assert not (tmp_path / "evil.py").exists()


def test_sizes_are_counted_as_the_bytes_arrive(usr_dir, monkeypatch):
    monkeypatch.setattr(skill_import, "MAX_TOTAL_BYTES", 5_000)
    data = zip_bytes({"big/SKILL.md": skill_md("big", "big"), "big/a.bin": os.urandom(3_000),
                      "big/b.bin": os.urandom(3_000)})  # fmt: skip
    with pytest.raises(ImportRefused, match="unpacks to more than"):
        run_import(data)
    assert installed(usr_dir) == set()


def test_a_file_larger_than_it_said_is_refused_as_its_bytes_arrive(usr_dir, monkeypatch):
    """A folder upload's file (or any entry) may stream more than it declared: the per-file
    limit counts what comes, not what was said."""
    monkeypatch.setattr(skill_import, "MAX_FILE_BYTES", 5_000)
    entries = [
        skill_import.Entry("big/SKILL.md", lambda: io.BytesIO(skill_md("big", "big").encode())),
        skill_import.Entry("big/data.bin", lambda: io.BytesIO(os.urandom(6_000)), declared=100),
    ]
    with pytest.raises(ImportRefused, match="'big/data.bin' is larger than"):
        skill_import.import_skills(entries)
    assert installed(usr_dir) == set()


def test_deleting_takes_out_only_a_user_skill(usr_dir, tmp_path):
    make_skill(usr_dir / "skills", "mine", "mine")
    outside = make_skill(tmp_path / "elsewhere", "linked", "linked")
    (usr_dir / "skills" / "linked").symlink_to(outside)
    delete_user_skill("mine")
    delete_user_skill("linked")  # the link goes; what it pointed to stays
    assert installed(usr_dir) == set() and (outside / "SKILL.md").exists()
    with pytest.raises(skill_import.NotFound):
        delete_user_skill("report-writing")  # shipped: not in usr/skills
    with pytest.raises(skill_import.UserError):
        delete_user_skill("../agents")
