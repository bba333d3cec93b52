"""End-to-end fixtures: a real run_ui.py process and Debian's Chromium through Playwright.

`cadre` and `page` give a test a run_ui.py of its own, in its `usr_dir`. A server start
costs seconds (and litellm's start-up in it more), so a module whose tests need no usr/
of their own shares one with the test process's other such modules: `shared_cadre` and
`shared_page` (a module names them `cadre` and `page` with two small fixtures of its own,
see test_chat_ui.py). Each test still gets a fresh browser context, makes its own chats,
and finds the settings as the module's first test found them. One Chromium serves all the
modules of a test process (`SharedChromium`).

A screenshot of the page is saved in tests/e2e/artifacts/ for every failed test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import shared_desktop
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import live_server, settings_kept, warm_up
from tests.support.server_process import ServerProcess, server_env

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
#: What the utility model answers on a shared server (it names chats): a naming call that
#: comes late, after its test ended, must never take a reply the next test scripted.
CHAT_NAME = "Named by the utility model"
# Flags for a headless Chromium on a machine with no network but loopback.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_hearing(wav: Path) -> Iterator[object]:
    """A Chromium of its own whose microphone plays `wav` (a module's `browser` fixture
    yields from it; the shared one is stopped meanwhile, see `_own_browser_alone`)."""
    from playwright.sync_api import sync_playwright

    flags = ["--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={wav}"]
    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                          args=[*CHROMIUM_ARGS, *flags])  # fmt: skip
    yield chromium
    chromium.close()
    playwright.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(reason=f"{CHROMIUM} is missing (the test command installs it as root)")
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[FAILED] = report.failed


FAILED = pytest.StashKey[bool]()


class SharedChromium:
    """One Playwright and its Chromium for all the e2e modules of a test process, started
    on first use: a start costs 2 to 3 s (a Node driver and a browser), and each of some
    thirty modules paid one. Each test still gets a fresh browser context (`open_page`).

    Playwright's sync API keeps an event loop running on the main thread while it is
    started, where asyncio tests cannot run: tests/conftest.py puts every e2e test after
    all the others, and test processes take modules in that order (cadre.py test), so no
    asyncio test comes after it. A second sync Playwright cannot start beside it: a module
    with a `browser` of its own (other flags) has this one stopped first."""

    def __init__(self) -> None:
        self.playwright: Any = None
        self.chromium: Any = None

    def get(self) -> Any:
        if self.chromium is None or not self.chromium.is_connected():  # a crash: a new one
            if self.playwright is None:
                from playwright.sync_api import sync_playwright

                self.playwright = sync_playwright().start()
            self.chromium = self.playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
            )
        return self.chromium

    def stop(self) -> None:
        if self.chromium is not None and self.chromium.is_connected():
            self.chromium.close()
        if self.playwright is not None:
            self.playwright.stop()
        self.playwright = self.chromium = None


@pytest.fixture(scope="session")
def _shared_chromium() -> Iterator[SharedChromium]:
    shared = SharedChromium()
    yield shared
    shared.stop()


@pytest.fixture(scope="module", autouse=True)
def _own_browser_alone(request: pytest.FixtureRequest, _shared_chromium: SharedChromium) -> None:
    """Before a module with a `browser` fixture of its own: the shared one stopped."""
    if "browser" in vars(request.module):
        _shared_chromium.stop()


@pytest.fixture(scope="module")
def browser(_shared_chromium: SharedChromium) -> Iterator[object]:
    """The process's Chromium (`SharedChromium`) for this module; the contexts the module
    left open are closed after it, so the next module starts from none."""
    chromium = _shared_chromium.get()
    yield chromium
    if chromium.is_connected():
        for context in chromium.contexts:
            context.close()


@pytest.fixture
def cadre(llm, usr_dir, tmp_path) -> Iterator[ServerProcess]:
    """run_ui.py of the test's own, talking to the fake model server, in the test's usr/
    (for a test that sets up usr/ first; else `shared_cadre` costs less)."""
    server = ServerProcess(server_env(), tmp_path / "server.log").start()
    yield server
    server.stop()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest, cadre: ServerProcess) -> Iterator[object]:
    yield from open_page(browser, request, cadre.url)


@pytest.fixture(scope="session")
def _process_cadre(_fake_llm_server: FakeLLMServer, tmp_path_factory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("cadre")
    server = live_server(folder, _fake_llm_server.base_url, llm_retry_delay="0.01")
    warm_up(server, _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_cadre(_process_cadre: ServerProcess) -> Iterator[ServerProcess]:
    """run_ui.py talking to the fake model server, with a usr/ of its own
    (`shared_cadre.usr_dir`, not the test's `usr_dir`), its first model call made: one for
    all the modules of a test process that take it (a start and that call cost 5 s of CPU
    and more, each module paid them). A module finds the chats of those before it, as a
    test finds those of the tests before it; afterwards the runs it left are stopped and
    its settings put back, so the next module finds the server as this one did."""
    with settings_kept(_process_cadre):
        yield _process_cadre
        stop_runs(_process_cadre)


def stop_runs(server: ServerProcess) -> None:
    """Stop the chats that still run on `server` (its own key) and wait until none does."""
    key = json.loads((server.usr_dir / "settings.json").read_text())["api_key"]
    shared_desktop.stop_runs(server, key)


@pytest.fixture
def shared_page(
    browser, request: pytest.FixtureRequest, shared_cadre: ServerProcess, llm: FakeLLMServer
) -> Iterator[object]:
    """A fresh browser context's page on the module's server. The utility model answers
    CHAT_NAME; the settings a test saved are put back after it."""
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    with settings_kept(shared_cadre):
        yield from open_page(browser, request, shared_cadre.url)


def open_page(
    browser, request: pytest.FixtureRequest, url: str, **options: object
) -> Iterator[object]:
    """A fresh browser context's page at `url`; fails the test on any JavaScript error.

    `options` go to the browser context (viewport, color_scheme, ...); 1280x800 by default.
    """
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **options})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    yield page
    if request.node.stash.get(FAILED, False):
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
