"""Skills: SKILL.md parsing, discovery across the layers, unusable skills listed with why."""

from __future__ import annotations

import pytest

from profiles import skills
from profiles.skill_format import SkillFormatError, parse_skill
from tests.support.skill_files import make_skill, skill_md


def test_parses_the_open_format_with_its_optional_fields():
    text = skill_md(
        "pdf-tools", "Fill and merge PDF forms. Use for PDFs.", body="# Steps\n1. Open it.",
        extra="license: Apache-2.0\ncompatibility: Needs qpdf\nallowed-tools: Bash Read\n"
        "metadata:\n  author: someone\n  version: '1.0'\n",
    )  # fmt: skip
    head = parse_skill(text, "pdf-tools")
    assert (head.name, head.description) == ("pdf-tools", "Fill and merge PDF forms. Use for PDFs.")
    assert head.body == "# Steps\n1. Open it."
    assert head.license == "Apache-2.0" and head.compatibility == "Needs qpdf"
    assert head.allowed_tools == ("Bash", "Read")
    assert head.metadata == {"author": "someone", "version": "1.0"}
    assert head.enabled and head.warnings == ()


def test_agent_zero_top_level_fields_are_kept_and_enabled_false_honoured():
    text = (
        "\ufeff---\r\nname: helper\r\nversion: 1.2.0\r\nauthor: A0 user\r\ntier: 1\r\n"
        "description: >\r\n  Helps.\r\n  Twice.\r\nenabled: false\r\n---\r\nBody\r\n"
    )
    head = parse_skill(text, "helper")
    assert head.description == "Helps. Twice."
    assert head.metadata == {"version": "1.2.0", "author": "A0 user", "tier": "1"}
    assert head.enabled is False and head.body == "Body"


def test_a_name_off_the_rules_or_unlike_its_folder_is_a_warning_not_a_refusal():
    head = parse_skill(skill_md("PDF_Tools", "x" * 1100), "pdf")
    assert head.name == "PDF_Tools"
    assert any("lowercase letters" in w for w in head.warnings)
    assert any("known as 'pdf'" in w for w in head.warnings)
    assert any("agents see its first 1024" in w for w in head.warnings)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("# Just markdown\n", "must start with a front matter block"),
        ("---\nname: a\ndescription: b\n", "front matter is not closed"),
        ("---\nname: a\ndescription: b: c\n---\n", "not valid YAML (line 3, column 15)"),
        ("---\n- a\n- b\n---\n", "must be 'name: ...' lines"),
        ("---\ndescription: b\n---\n", "has no name: add 'name: folder'"),
        ("---\nname: a\ndescription: ''\n---\n", "has no description"),
        ("---\nname: a\ndescription: b\nmetadata: [1]\n---\n", "metadata must be a mapping"),
        ("---\nname: a\ndescription: {x: 1}\n---\n", "description must be text"),
        ("---\nname: a\ndescription: b\nenabled: maybe\n---\n", "enabled must be true or false"),
    ],
)
def test_malformed_skill_files_are_refused_saying_what_to_fix(text, says):
    with pytest.raises(SkillFormatError) as caught:
        parse_skill(text, "folder")
    assert says in str(caught.value)


def test_later_layers_override_by_name_and_broken_skills_are_listed(usr_dir, shipped):
    make_skill(shipped, "report", "shipped report")
    make_skill(shipped, "csv", "shipped csv")
    make_skill(usr_dir / "skills", "report", "user report")
    make_skill(usr_dir / "agents" / "analyst" / "skills", "csv", "analyst csv")
    make_skill(usr_dir / "projects" / "lab" / "skills", "report", "lab report")
    make_skill(usr_dir / "skills", "broken", text="no front matter")
    (usr_dir / "skills" / "empty-folder").mkdir()
    (usr_dir / "skills" / "bad name!").mkdir()

    plain = skills.discover_skills()
    assert {n: s.description for n, s in plain.items() if s.usable} == {
        "report": "user report", "csv": "shipped csv"}  # fmt: skip
    assert plain["report"].source == "user" and plain["report"].overrides == ("shipped",)
    assert "must start with a front matter block" in plain["broken"].problem
    assert plain["empty-folder"].problem == "no SKILL.md in the folder"
    assert "bad name!" not in plain

    found = skills.discover_skills("analyst", "lab")
    assert found["csv"].description == "analyst csv" and found["csv"].source == "profile:analyst"
    assert found["report"].description == "lab report"
    assert found["report"].overrides == ("shipped", "user")
    assert [s.name for s in skills.usable_skills("analyst", "lab")] == ["csv", "report"]


def test_a_new_or_edited_skill_is_seen_without_a_restart(usr_dir, shipped):
    assert skills.discover_skills() == {}
    root = make_skill(usr_dir / "skills", "notes", "first")
    assert skills.discover_skills()["notes"].description == "first"
    (root / "SKILL.md").write_text(skill_md("notes", "second, longer"))
    assert skills.discover_skills()["notes"].description == "second, longer"


def test_a_skill_file_linking_outside_its_folder_is_unusable(usr_dir, shipped, tmp_path):
    secret = tmp_path / "elsewhere.md"
    secret.write_text(skill_md("leak", "outside"))
    root = usr_dir / "skills" / "leak"
    root.mkdir(parents=True)
    (root / "SKILL.md").symlink_to(secret)
    found = skills.discover_skills()["leak"]
    assert not found.usable and "leads outside its folder" in found.problem


def test_a_skills_files_are_its_own_regular_files_never_its_links(usr_dir, tmp_path):
    root = make_skill(usr_dir / "skills", "tidy", "Tidies.", files={"notes/a.md": "mine"})
    (tmp_path / "outside.md").write_text("not the skill's")
    (root / "notes" / "link.md").symlink_to(tmp_path / "outside.md")
    (root / "notes" / "inner-link.md").symlink_to(root / "notes" / "a.md")
    (root / "elsewhere").symlink_to(tmp_path)  # a folder linked in: not walked either
    (root / ".hidden.md").write_text("hidden")
    files, more = skills.skill_files(root)
    size = (root / "SKILL.md").stat().st_size
    assert [(f.path, f.size) for f in files] == [("SKILL.md", size), ("notes/a.md", 4)]
    assert not more


def test_the_shipped_skills_are_usable_and_bring_their_files():
    found = {s.name: s for s in skills.usable_skills()}
    assert {"report-writing", "csv-data"} <= found.keys()
    for skill in found.values():
        assert skill.head is not None and not skill.head.warnings, skill.name
        files, more = skills.skill_files(skill.root)
        assert len(files) > 1 and not more
