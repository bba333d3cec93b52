"""The skills panel in Chromium: list with sources and problems, view, import, delete.

The test process's shared server serves the module; the test walks the panel the way a
newcomer would.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import open_page
from tests.support.axe import axe_violations, describe
from tests.support.server_process import ServerProcess
from tests.support.skill_files import make_skill, skill_md, zip_bytes


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> Iterator[ServerProcess]:
    """The test process's shared run_ui.py (tests/e2e/conftest.py); the skills the module
    adds are gone after it, so no later module's agents have them in their prompts."""
    skills = shared_cadre.usr_dir / "skills"
    made_here = not skills.exists()
    yield shared_cadre
    if made_here:
        shutil.rmtree(skills, ignore_errors=True)


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url, bypass_csp=True)  # axe runs in the page


def no_blocking_violation(page) -> None:
    found = axe_violations(page, '[data-testid="skills"]')
    assert not found, f"axe on the skills panel:\n{describe(found)}"


def item(page, name: str):
    return page.locator(f"[data-testid=skill-item][data-name='{name}']")


def test_the_skills_panel_lists_views_imports_and_deletes(page, cadre, tmp_path):
    usr = Path(cadre.env["CADRE_USR_DIR"])
    make_skill(usr / "skills", "half-done", text="---\nname: half-done\n---\nno description")
    # The panels' buttons all fit in the sidebar (a third one once pushed Settings out of it).
    side = page.get_by_test_id("sidebar").bounding_box()
    for button in ("memory-open", "skills-open", "settings-open"):
        box = page.get_by_test_id(button).bounding_box()
        assert box["x"] + box["width"] <= side["x"] + side["width"], f"{button} sticks out"
    page.get_by_test_id("skills-open").click()
    item(page, "csv-data").wait_for()
    assert "Built in" in item(page, "csv-data").get_by_test_id("skill-source").inner_text()
    assert item(page, "csv-data").get_by_test_id("skill-delete").count() == 0
    assert (
        "has no description" in item(page, "half-done").get_by_test_id("skill-problem").inner_text()
    )

    good = tmp_path / "tidy.zip"
    good.write_bytes(zip_bytes({"tidy/SKILL.md": skill_md("tidy", "Tidy a folder.", "Sort it.")}))
    page.get_by_test_id("skills-import-zip").set_input_files(str(good))
    item(page, "tidy").wait_for()
    item(page, "tidy").get_by_test_id("skill-view-open").click()
    page.get_by_test_id("skill-view").wait_for()
    assert page.get_by_test_id("skill-instructions").inner_text() == "Sort it."
    no_blocking_violation(page)
    page.get_by_test_id("skill-back").click()

    hostile = tmp_path / "evil.zip"
    hostile.write_bytes(zip_bytes({"evil/SKILL.md": skill_md("evil", "x"), "../../x.py": "x"}))
    page.get_by_test_id("skills-import-zip").set_input_files(str(hostile))
    status = page.get_by_test_id("skills-status")
    page.wait_for_function("() => document.querySelector('[data-testid=skills-status]')"
                           ".textContent.startsWith('Nothing was imported')")  # fmt: skip
    assert "goes up a folder" in status.inner_text()
    assert item(page, "evil").count() == 0 and not (usr / "skills" / "evil").exists()

    folder = tmp_path / "upload" / "folder-skill"
    make_skill(folder.parent, "folder-skill", "From a folder.", files={"ref/a.md": "A"})
    page.get_by_test_id("skills-import-folder").set_input_files(str(folder))
    item(page, "folder-skill").wait_for()
    assert (usr / "skills" / "folder-skill" / "ref" / "a.md").read_text() == "A"

    item(page, "tidy").get_by_test_id("skill-delete").click()
    page.get_by_test_id("confirm-ok").click()
    item(page, "tidy").wait_for(state="detached")
    assert not (usr / "skills" / "tidy").exists()
