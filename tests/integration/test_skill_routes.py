"""The skills panel's routes: list, show, import (zip and folder), delete; CSRF as elsewhere."""

from __future__ import annotations

import io

from tests.support.skill_files import make_skill, skill_md, zip_bytes


def upload_zip(http, data: bytes, name: str = "skills.zip", **form: str):
    return http.post("/api/skills/import", data={"archive": (io.BytesIO(data), name), **form},
                     content_type="multipart/form-data")  # fmt: skip


def test_list_show_import_and_delete(http, usr_dir):
    listed = http.get("/api/skills").get_json()["skills"]
    shipped = {s["name"]: s for s in listed}
    assert shipped["csv-data"]["source"] == "shipped" and not shipped["csv-data"]["deletable"]

    made = upload_zip(http, zip_bytes({"tidy/SKILL.md": skill_md("tidy", "Tidy up."),
                                       "tidy/steps.md": "1. sort"}))  # fmt: skip
    assert made.get_json() == {"imported": ["tidy"], "replaced": [], "skipped": []}
    shown = http.get("/api/skills/tidy").get_json()
    assert shown["instructions"] == "Do it well." and shown["deletable"]
    assert [f["path"] for f in shown["files"]] == ["SKILL.md", "steps.md"]

    again = upload_zip(http, zip_bytes({"tidy/SKILL.md": skill_md("tidy", "Tidier.")}))
    assert again.status_code == 409 and "already installed: tidy" in again.get_json()["error"]
    replaced = upload_zip(http, zip_bytes({"tidy/SKILL.md": skill_md("tidy", "Tidier.")}),
                          replace="1")  # fmt: skip
    assert replaced.get_json()["replaced"] == ["tidy"]

    assert http.post("/api/skills/tidy/delete").get_json() == {"deleted": "tidy"}
    assert http.get("/api/skills/tidy").status_code == 404
    assert http.post("/api/skills/csv-data/delete").status_code == 404  # shipped: not deletable
    assert not (usr_dir / "skills" / "tidy").exists()


def test_a_folder_upload_keeps_its_paths_and_a_hostile_one_is_refused(http, usr_dir):
    files = [(io.BytesIO(skill_md("mine", "Mine.").encode()), "mine/SKILL.md"),
             (io.BytesIO(b"print(1)"), "mine/scripts/run.py")]  # fmt: skip
    made = http.post("/api/skills/import", data={"files": files},
                     content_type="multipart/form-data")  # fmt: skip
    assert made.get_json()["imported"] == ["mine"]
    assert (usr_dir / "skills" / "mine" / "scripts" / "run.py").read_bytes() == b"print(1)"

    hostile = [(io.BytesIO(skill_md("x", "X.").encode()), "x/SKILL.md"),
               (io.BytesIO(b"owned"), "x/../../settings.json")]  # fmt: skip
    refused = http.post("/api/skills/import", data={"files": hostile},
                        content_type="multipart/form-data")  # fmt: skip
    assert refused.status_code == 400 and "'..'" in refused.get_json()["error"]
    assert sorted(p.name for p in (usr_dir / "skills").iterdir()) == ["mine"]
    assert not (usr_dir / "settings.json").exists()


def test_a_profile_and_project_view_and_a_change_without_csrf(server, http, usr_dir):
    make_skill(usr_dir / "projects" / "lab" / "skills", "lab-only", "Only in the lab.")
    names = {s["name"] for s in http.get("/api/skills?project=lab").get_json()["skills"]}
    assert "lab-only" in names
    assert "lab-only" not in {s["name"] for s in http.get("/api/skills").get_json()["skills"]}
    assert http.get("/api/skills?project=../x").status_code == 400
    make_skill(usr_dir / "skills", "keep", "Keep me.")
    bare = server.app.test_client()  # no CSRF token
    assert bare.post("/api/skills/keep/delete").status_code == 403
    assert (usr_dir / "skills" / "keep").exists()
