"""The Files panel in Chromium: upload, preview, rename, delete with a confirmation, a path
leading out of the work folder refused with its reason (and logged), and the editor: edit,
save, a conflict detected then reloaded or overwritten, a binary file offered for download,
a file's CRLF line ends kept, a new file made and edited, saves on their way (typing
meanwhile kept unsaved, one sent at a time) and leaving the page with changes not saved.

One run_ui.py serves the module; each test works in a folder of its own in its work folder."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from execution import sandbox_choice
from helpers.settings import Settings
from tests.e2e.conftest import open_page
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import FakeLLMServer
from tests.support.live_web import live_server
from tests.support.server_process import ServerProcess

#: A 16x16 blue PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAKklEQVR4nGNkYPj/n4ECwESJ5lEDRg0YNWDUgF"
    "EDRg0YNWDUgFEDRg0YNWDUgFEDhoUBAMmEAx9Wv2IAAAAAAElFTkSuQmCC"
)
HOSTILE = (
    "# Plan\n\nstep <img src=x onerror=\"document.title='owned'\"> one\n\n<script>x()</script>\n"
)

#: The editor's state once saved ("Not saved" holds "saved" too: has_text ignores case).
SAVED = re.compile(r"^Saved \(")


@pytest.fixture(scope="module")
def cadre(_fake_llm_server: FakeLLMServer, tmp_path_factory) -> Iterator[ServerProcess]:
    """One run_ui.py for the module; no model is called here, so none is warmed up."""
    server = live_server(tmp_path_factory.mktemp("cadre"), _fake_llm_server.base_url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    # bypass_csp: axe-core is injected into the page (the markdown is sanitized, not
    # merely blocked by the policy: the test checks the DOM).
    yield from open_page(browser, request, cadre.url, bypass_csp=True)


@pytest.fixture
def strict_page(browser, request, cadre) -> Iterator[object]:
    """The page under its own Content-Security-Policy, as people get it (the editor's styles
    and code must work under it)."""
    yield from open_page(browser, request, cadre.url)


def names(page) -> list[str]:
    return page.get_by_test_id("files-name").all_text_contents()


def test_upload_preview_rename_delete_and_a_refused_path(page, cadre, tmp_path):
    work = cadre.usr_dir / "workdir"
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
    logged = cadre.log_path.read_text(errors="replace")
    assert "file panel refused GET /api/files/list (400): path refused: '../chats'" in logged


def editor_text(page) -> str:
    """The editor's text as shown, line by line (a short file is shown whole)."""
    return page.locator(".cm-content").evaluate(
        "el => [...el.querySelectorAll('.cm-line')].map((line) => line.textContent).join('\\n')"
    )


def test_edit_save_a_conflict_and_a_binary_file(strict_page, cadre):
    page = strict_page
    folder = cadre.usr_dir / "workdir" / "editing"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "hello.py"
    script.write_text("def hello():\n    return 1\n")
    (folder / "blob.bin").write_bytes(b"\x00\x01\x02")
    (folder / "dos.txt").write_bytes(b"a\r\nb\r\n")

    page.get_by_test_id("files-open").click()
    page.get_by_test_id("files-limit").filter(has_text="Largest upload").wait_for()  # listed
    page.get_by_test_id("files-goto").fill("editing")
    page.get_by_test_id("files-goto").press("Enter")
    page.get_by_role("button", name="Edit hello.py").click()
    content = page.get_by_role("textbox", name="Text of hello.py")
    content.wait_for()
    # Highlighted under the page's own CSP: "def" is a keyword token with a colour of its own.
    keyword = content.locator("span", has_text="def").first
    assert keyword.evaluate("el => getComputedStyle(el).color") != content.evaluate(
        "el => getComputedStyle(el).color"
    )
    content.press("Control+End")
    page.keyboard.type("print(hello())\n")
    assert page.get_by_test_id("files-editor-state").inner_text() == "Not saved"
    content.press("Control+s")  # the editor's own key: the browser's "save page" never opens
    page.get_by_test_id("files-editor-state").filter(has_text=SAVED).wait_for()
    assert script.read_text() == "def hello():\n    return 1\nprint(hello())\n"

    script.write_text("# rewritten by an agent\n")  # meanwhile, on disk
    page.keyboard.type("# mine")
    page.get_by_test_id("files-editor-save").click()
    conflict = page.get_by_test_id("files-conflict")
    conflict.wait_for()
    assert "editing/hello.py changed on disk after you opened it" in conflict.inner_text()
    assert script.read_text() == "# rewritten by an agent\n"  # nothing written over it
    page.get_by_role("button", name="Reload from disk").click()
    conflict.wait_for(state="hidden")
    assert editor_text(page) == "# rewritten by an agent\n"

    script.write_text("# and again\n")
    content.press("Control+End")
    page.keyboard.type("# mine")
    content.press("Control+s")
    conflict.wait_for()
    page.get_by_role("button", name="Overwrite with mine").click()
    page.get_by_test_id("files-editor-state").filter(has_text=SAVED).wait_for()
    assert script.read_text() == "# rewritten by an agent\n# mine"

    page.keyboard.type("!")  # unsaved: closing asks first, and Keep editing keeps it
    page.get_by_test_id("files-editor-close").click()
    asked = page.get_by_test_id("dialog").inner_text()
    assert asked.startswith("Discard your changes to hello.py?")
    page.get_by_test_id("confirm-cancel").click()
    assert editor_text(page).endswith("# mine!")

    page.get_by_role("button", name="Edit blob.bin").click()  # asks again: Discard
    page.get_by_test_id("confirm-ok").click()
    refused = page.get_by_test_id("files-editor-refused")
    refused.wait_for()
    assert "editing/blob.bin is not a text file" in refused.inner_text()
    assert page.get_by_test_id("files-editor-download").get_attribute("download") == "blob.bin"
    assert script.read_text() == "# rewritten by an agent\n# mine"

    page.get_by_role("button", name="Edit dos.txt").click()  # written with CRLF: kept so
    page.get_by_role("textbox", name="Text of dos.txt").press("Control+End")
    page.keyboard.type("c")
    page.keyboard.press("Control+s")
    page.get_by_test_id("files-editor-state").filter(has_text=SAVED).wait_for()
    assert (folder / "dos.txt").read_bytes() == b"a\r\nb\r\nc"

    # New file: made empty in this folder and opened to edit; a name taken or a path refused.
    page.get_by_test_id("files-new-file").click()
    page.get_by_test_id("dialog-input").fill("notes.md")
    page.get_by_role("button", name="Create and edit").click()
    page.get_by_role("textbox", name="Text of notes.md").wait_for()
    assert (folder / "notes.md").read_text() == ""
    assert (folder / "notes.md").stat().st_mode & 0o777 == 0o600
    page.keyboard.type("# Notes")
    page.keyboard.press("Control+s")
    page.get_by_test_id("files-editor-state").filter(has_text=SAVED).wait_for()
    assert (folder / "notes.md").read_text() == "# Notes"
    assert "notes.md" in names(page)
    for taken, said in (("hello.py", "editing/hello.py already exists: pick another name"),
                        ("../out.md", "contains '/': give a name, not a path")):  # fmt: skip
        page.get_by_test_id("files-new-file").click()
        page.get_by_test_id("dialog-input").fill(taken)
        page.get_by_role("button", name="Create and edit").click()
        expect(page.get_by_test_id("files-error")).to_contain_text(said)
    assert script.read_text() == "# rewritten by an agent\n# mine"  # not made anew
    assert not (folder.parent / "out.md").exists()
    assert page.get_by_role("textbox", name="Text of notes.md").is_visible()  # still open
    page.get_by_role("textbox", name="Text of notes.md").press("End")
    page.keyboard.type("!")  # not saved: a new file asks, and Keep editing makes none
    page.get_by_test_id("files-new-file").click()
    page.get_by_test_id("dialog-input").fill("other.md")
    page.get_by_role("button", name="Create and edit").click()
    expect(page.get_by_test_id("dialog")).to_contain_text("Discard your changes to notes.md?")
    page.get_by_test_id("confirm-cancel").click()
    expect(page.get_by_test_id("dialog")).to_be_hidden()
    assert editor_text(page) == "# Notes!"
    assert sorted(p.name for p in folder.iterdir()) == ["blob.bin", "dos.txt", "hello.py",
                                                        "notes.md"]  # fmt: skip


#: Saves held in the page until the test lets each go (a slow network): their bodies in
#: `__saves`, each sent to the server by `go()`.
HOLD_SAVES = """() => {
  window.__saves = [];
  const send = window.fetch;
  window.fetch = (url, options) => !String(url).includes('/api/files/save') ? send(url, options)
    : new Promise((done) => window.__saves.push({ body: JSON.parse(options.body),
      go: () => done(send(url, options)) }));
}"""


def test_saves_on_their_way_keep_later_typing_one_at_a_time_and_leaving_asks(page, cadre):
    folder = cadre.usr_dir / "workdir" / "inflight"
    folder.mkdir(parents=True, exist_ok=True)
    notes = folder / "notes.md"
    notes.write_text("one\n")
    page.get_by_test_id("files-open").click()
    page.get_by_test_id("files-limit").filter(has_text="Largest upload").wait_for()
    page.get_by_test_id("files-goto").fill("inflight")
    page.get_by_test_id("files-goto").press("Enter")
    page.get_by_role("button", name="Edit notes.md").click()
    content = page.get_by_role("textbox", name="Text of notes.md")
    content.wait_for()
    page.evaluate(HOLD_SAVES)
    state = page.get_by_test_id("files-editor-state")

    # Typed while the save is on its way: not on disk, so not marked saved.
    content.press("Control+End")
    page.keyboard.type("two")
    content.press("Control+s")
    page.wait_for_function("() => window.__saves.length === 1")
    page.keyboard.type(" three")
    page.evaluate("() => window.__saves[0].go()")
    expect(state).to_have_text("Not saved: changed while saving")
    assert notes.read_text() == "one\ntwo"
    page.get_by_test_id("files-editor-close").click()
    expect(page.get_by_test_id("dialog")).to_contain_text("Discard your changes to notes.md?")
    page.get_by_test_id("confirm-cancel").click()

    # Saved twice quickly: one save on its way at a time; the second, the text unchanged
    # when the first answers, is the first's (nothing more sent, no conflict with itself).
    content.press("Control+s")
    content.press("Control+s")
    page.wait_for_function("() => window.__saves.length >= 2")
    page.evaluate("() => window.__saves[1].go()")
    expect(state).to_have_text(SAVED)
    assert page.evaluate("window.__saves.length") == 2
    # Typed between the two: the second is sent when the first answers, with its version.
    page.keyboard.type("!")
    content.press("Control+s")
    page.keyboard.type("?")
    content.press("Control+s")
    page.wait_for_function("() => window.__saves.length >= 3")
    assert page.evaluate("window.__saves.length") == 3  # the second waits for the first
    page.evaluate("() => window.__saves[2].go()")
    page.wait_for_function("() => window.__saves.length === 4")
    first, second = page.evaluate("[window.__saves[2].body, window.__saves[3].body]")
    assert (first["text"], second["text"]) == ("one\ntwo three!", "one\ntwo three!?")
    assert second["version"] != first["version"]  # the first's answer
    page.evaluate("() => window.__saves[3].go()")
    expect(state).to_have_text(SAVED)
    assert page.get_by_test_id("files-conflict").is_hidden()
    assert notes.read_text() == "one\ntwo three!?"

    # Leaving the page: nothing asked when all is saved; asked with changes not saved.
    unload = "() => { const e = new Event('beforeunload', { cancelable: true });"
    unload += " window.dispatchEvent(e); return e.defaultPrevented; }"
    assert page.evaluate(unload) is False
    page.keyboard.type("#")
    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)
    assert asked.value.type == "beforeunload"
    asked.value.accept()
