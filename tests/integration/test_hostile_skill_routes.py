"""Hostile SKILL.md and agent.yaml files through the real app: an import is a 400 with the
reason and leaves nothing; files left in usr/ are listed unusable with the reason."""

from __future__ import annotations

import base64
import io
import logging
import os

import pytest

from tests.support.hostile_yaml import bomb_skill_md, bomb_zip, deep_list
from tests.support.skill_files import make_skill, skill_md, zip_bytes


def upload_zip(http, data: bytes, name: str = "laughs.zip"):
    return http.post("/api/skills/import", data={"archive": (io.BytesIO(data), name)},
                     content_type="multipart/form-data")  # fmt: skip


def leftovers(usr_dir) -> list[str]:
    folder = usr_dir / "skills"
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_the_alias_bomb_zip_is_refused_by_the_import_route_and_nothing_is_left(
    http, usr_dir, caplog
):
    with caplog.at_level(logging.WARNING, logger="server.routes.skills"):
        refused = upload_zip(http, bomb_zip())
    assert refused.status_code == 400
    reason = refused.get_json()["error"]
    assert reason.startswith("laughs/SKILL.md: SKILL.md's front matter uses a YAML alias, *a")
    assert "write the value out in full" in reason
    assert [r.getMessage() for r in caplog.records] == [f"skill import refused: {reason}"]
    assert leftovers(usr_dir) == []
    assert http.get("/health").get_json()["status"] == "ok"


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("version: " + "1" * 5000 + "\n", "has a number of 5000 characters"),
        ("date: 2024-13-01\n", "month must be in 1..12"),
        (f"x: {deep_list(30_000)}\n", "nests lists or mappings too deeply"),
    ],
)
def test_a_zip_whose_skill_python_cannot_read_is_a_400_not_a_500(http, usr_dir, extra, says):
    refused = upload_zip(http, zip_bytes({"odd/SKILL.md": skill_md("odd", "Odd.", extra=extra)}))
    assert refused.status_code == 400 and says in refused.get_json()["error"]
    assert leftovers(usr_dir) == []


def test_a_skill_md_larger_than_discovery_reads_is_refused_at_import(http, usr_dir):
    body = base64.b64encode(os.urandom(240_000)).decode()  # packs badly: not a zip bomb
    big = skill_md("big", "Big.", body=body)
    refused = upload_zip(http, zip_bytes({"big/SKILL.md": big}))
    assert refused.status_code == 400 and "SKILL.md is larger than 256 KB" in refused.get_json()[
        "error"]  # fmt: skip
    assert leftovers(usr_dir) == []


def test_hostile_skills_in_usr_skills_are_listed_unusable_and_the_others_load(http, usr_dir):
    make_skill(usr_dir / "skills", "laughs", text=bomb_skill_md())
    make_skill(
        usr_dir / "skills", "month-13", text=skill_md("month-13", "D.", extra="on: 2024-13-01\n")
    )
    make_skill(usr_dir / "skills", "tidy", "Tidy up.")
    listed = http.get("/api/skills")
    assert listed.status_code == 200
    found = {s["name"]: s for s in listed.get_json()["skills"]}
    assert found["tidy"]["usable"] and found["csv-data"]["usable"]
    assert not found["laughs"]["usable"] and "uses a YAML alias, *a" in found["laughs"]["problem"]
    assert not found["month-13"]["usable"] and "month must be" in found["month-13"]["problem"]
    shown = http.get("/api/skills/laughs").get_json()
    assert "uses a YAML alias" in shown["problem"] and shown["deletable"]
    assert http.post("/api/skills/laughs/delete").get_json() == {"deleted": "laughs"}


def test_hostile_profiles_are_listed_with_the_reason_and_the_others_load(http, usr_dir):
    for name, text in {
        "laughs": "title: L\nx: &a [1, 2]\ny: [*a, *a]\n",
        "deep": f"title: D\nx: {deep_list(30_000)}\n",
    }.items():
        (usr_dir / "agents" / name).mkdir(parents=True)
        (usr_dir / "agents" / name / "agent.yaml").write_text(text)
    listed = http.get("/api/profiles")
    assert listed.status_code == 200
    found = {p["name"]: p for p in listed.get_json()}
    assert found["default"]["error"] == ""
    assert found["laughs"]["error"].startswith("agent.yaml uses a YAML alias, *a (line 3")
    assert found["deep"]["error"].startswith("agent.yaml nests lists or mappings too deeply")
