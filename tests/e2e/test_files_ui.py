"""The Files panel in Chromium: upload, preview, rename, delete with a confirmation, and
a path leading out of the work folder refused with its reason, against a real run_ui.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from execution import sandbox_choice
from helpers.settings import Settings
from tests.e2e.conftest import open_page
from tests.support.axe import axe_violations, describe

#: A 16x16 blue PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAKklEQVR4nGNkYPj/n4ECwESJ5lEDRg0YNWDUgF"
    "EDRg0YNWDUgFEDRg0YNWDUgFEDhoUBAMmEAx9Wv2IAAAAAAElFTkSuQmCC"
)
HOSTILE = (
    "# Plan\n\nstep <img src=x onerror=\"document.title='owned'\"> one\n\n<script>x()</script>\n"
)


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    # bypass_csp: axe-core is injected into the page (the markdown is sanitized, not
    # merely blocked by the policy: the test checks the DOM).
    yield from open_page(browser, request, cadre.url, bypass_csp=True)


def names(page) -> list[str]:
    return page.get_by_test_id("files-name").all_text_contents()


def test_upload_preview_rename_delete_and_a_refused_path(page, usr_dir, tmp_path):
    work = usr_dir / "workdir"
    work.mkdir(exist_ok=True)
    (work / "dot.png").write_bytes(PNG)
    picked = [tmp_path / "plan.md", tmp_path / "data.txt"]
    picked[0].write_text(HOSTILE)
    picked[1].write_text("one\ntwo\n")

    page.get_by_test_id("files-open").click()
    page.get_by_test_id("files-name").filter(has_text="dot.png").wait_for()
    page.get_by_test_id("files-upload").set_input_files([str(p) for p in picked])
    page.get_by_test_id("files-name").filter(has_text="plan.md").wait_for()
    assert names(page) == ["data.txt", "dot.png", "plan.md"]
    assert (work / "plan.md").read_text() == HOSTILE
    assert "Uploaded plan.md, data.txt" in page.get_by_test_id("files-progress").inner_text()
    # Next to the work folder: whether commands run sandboxed (a warning where they can't).
    sandboxed = sandbox_choice.choose(Settings()).confined
    expected = "Commands run sandboxed (bubblewrap)" if sandboxed else "Warning: commands run"
    assert page.get_by_test_id("files-sandbox").inner_text().startswith(expected)

    page.get_by_role("button", name="Preview plan.md").click()
    markdown = page.get_by_test_id("files-preview-markdown")
    markdown.locator("h1", has_text="Plan").wait_for()
    assert markdown.locator("script, [onerror]").count() == 0  # sanitized like the log
    assert page.title() != "owned"
    page.get_by_role("button", name="Preview dot.png").click()
    image = page.get_by_test_id("files-preview-image")
    image.wait_for()
    page.wait_for_function(  # loaded through /api/files/raw
        "() => document.querySelector('[data-testid=files-preview-image]').naturalWidth === 16"
    )
    violations = axe_violations(page, '[data-testid="files"]')
    assert not violations, describe(violations)

    page.get_by_role("button", name="Rename data.txt").click()
    page.get_by_test_id("dialog-input").fill("numbers.txt")
    page.get_by_test_id("confirm-ok").click()
    page.get_by_test_id("files-name").filter(has_text="numbers.txt").wait_for()
    assert (work / "numbers.txt").read_text() == "one\ntwo\n" and not (work / "data.txt").exists()

    page.get_by_role("button", name="Delete numbers.txt").click()
    page.get_by_test_id("confirm-cancel").click()  # asked first; No keeps the file
    assert (work / "numbers.txt").exists()
    page.get_by_role("button", name="Delete numbers.txt").click()
    assert page.get_by_test_id("dialog").inner_text().startswith("Delete numbers.txt?")
    page.get_by_test_id("confirm-ok").click()
    page.get_by_test_id("files-name").filter(has_text="numbers.txt").wait_for(state="detached")
    assert not (work / "numbers.txt").exists()

    page.get_by_test_id("files-goto").fill("../chats")
    page.get_by_test_id("files-goto").press("Enter")
    alert = page.get_by_role("alert").filter(has_text="goes up a folder")
    alert.wait_for()
    assert "'../chats'" in alert.inner_text()
    assert names(page) == ["dot.png", "plan.md"]  # still the work folder
