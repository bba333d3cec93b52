"""Skills whose SKILL.md is written to hurt the reader: refused with the reason, at import
and in discovery, with memory bounded, and never costing the other skills."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

from helpers.files import BASE_DIR
from profiles import skill_format, skills
from profiles.skill_format import SkillFormatError, parse_skill
from tests.support.hostile_yaml import bomb_skill_md, bomb_zip, deep_list
from tests.support.skill_files import make_skill, skill_md

#: Address space the import below may take: Python and Cadre's imports need ~100 MB; the
#: bomb, once expanded, takes gigabytes (the attack seen: 4.2 GB in a minute).
MEMORY_BOUND = 1024 * 2**20

_IMPORT_IN_CHILD = """
import io, json, sys
from profiles.skill_import import ImportRefused, import_zip
try:
    import_zip(io.BytesIO(sys.stdin.buffer.read()), fallback="laughs")
    print(json.dumps({"outcome": "imported"}))
except ImportRefused as exc:
    print(json.dumps({"outcome": "refused", "reason": str(exc)}))
"""


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


def test_the_alias_bomb_zip_is_refused_within_a_memory_bound(usr_dir):
    # In a child process with its address space bounded: the bomb expanded there fails with a
    # MemoryError (it did, before aliases were refused) instead of swapping the machine.
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_IN_CHILD], input=bomb_zip(), capture_output=True,
        cwd=BASE_DIR, preexec_fn=_bounded, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    answer = json.loads(done.stdout)
    assert answer["outcome"] == "refused"
    assert answer["reason"].startswith("laughs/SKILL.md: SKILL.md's front matter uses a YAML")
    assert "alias, *a (line 6, column" in answer["reason"]
    assert "write the value out in full" in answer["reason"]
    assert not (usr_dir / "skills").exists() or list((usr_dir / "skills").iterdir()) == []


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (f"metadata:\n  deep: {deep_list()}\n", "front matter is 195 KB long; Cadre reads at most"),
        (f"metadata:\n  deep: {deep_list(30_000)}\n", "nests lists or mappings too deeply (line 5"),
        ("metadata:\n  deep: " + "{a: " * 40 + "1" + "}" * 40 + "\n", "deeper than 32 levels"),
        ("version: " + "1" * 5000 + "\n", "has a number of 5000 characters (line 4, column 10)"),
        ("version: 0x" + "f" * 20000 + "\n", "put it in quotes if it is text"),
        ("date: 2024-13-01\n", "has a value that cannot be read (line 4, column 7): month"),
        (
            "notes: '" + "x" * 70_000 + "'\n",
            "front matter is 68 KB long; Cadre reads at most 64 KB",
        ),
    ],
)
def test_a_hostile_front_matter_is_refused_saying_why(extra, says):
    with pytest.raises(SkillFormatError) as caught:
        parse_skill(skill_md("bad", "Bad.", extra=extra), "bad")
    assert says in str(caught.value)


def test_metadata_values_are_short_texts():
    long = "y" * 5000
    text = skill_md("meta", "Meta.", extra=f"metadata:\n  long: {long}\n  tags: [a, b]\n")
    head = parse_skill(text, "meta")
    cap = skill_format.METADATA_VALUE_MAX
    assert len(head.metadata["long"]) == cap
    assert head.metadata["long"].endswith("…")
    assert head.metadata["tags"] == "['a', 'b']"
    assert any(f"metadata long is cut to {cap}" in w for w in head.warnings)


def test_hostile_skills_left_in_usr_skills_are_listed_unusable_and_the_others_load(
    usr_dir, shipped, caplog
):
    folder = usr_dir / "skills"
    make_skill(folder, "laughs", text=bomb_skill_md())
    make_skill(folder, "deep", text=skill_md("deep", "Deep.", extra=f"x: {deep_list(30_000)}\n"))
    make_skill(
        folder, "huge-number", text=skill_md("huge-number", "N.", extra="v: 1" + "0" * 5000 + "\n")
    )
    make_skill(folder, "month-13", text=skill_md("month-13", "Date.", extra="on: 2024-13-01\n"))
    make_skill(folder, "good", "Good.")

    found = skills.discover_skills()
    assert [s.name for s in skills.usable_skills()] == ["good"]
    assert "uses a YAML alias, *a" in found["laughs"].problem
    assert "nests lists or mappings too deeply" in found["deep"].problem
    assert "has a number of 5001 characters" in found["huge-number"].problem
    assert "month must be in 1..12" in found["month-13"].problem
    logged = [r.getMessage() for r in caplog.records if "unusable" in r.getMessage()]
    assert any("laughs is unusable" in line and "alias" in line for line in logged)
