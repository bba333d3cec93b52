"""The page's frame in Chromium: phone and desktop layouts, the dark theme, focus, toasts,
and axe-core's accessibility checks on the main views, in both themes and at both sizes.

The test process's shared run_ui.py serves the module (`shared_cadre`); a chat with log
items of several kinds is made once and looked at from fresh browser contexts.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import open_page
from tests.support.agents import answer, reply
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Fail, FakeLLMServer, Reply, model_is
from tests.support.server_process import ServerProcess

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
#: Generous: six test runs may share this machine's two cores.
WAIT_MS = 90_000
ITEM = '[data-testid="log-item"]'
# A function, not an expression: the page's CSP refuses to eval a string.
MESSAGE_BOX_FOCUSED = "() => document.activeElement?.dataset.testid === 'message-input'"
ANSWER_MD = (
    "Here is **the plan**:\n\n- one\n- two\n\n```python\ndef double(x):\n"
    "    # twice as much\n    return x * 2\nprint(f'{double(3)}')\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n> a quote with `code`"
)


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> ServerProcess:
    """The test process's shared run_ui.py (tests/e2e/conftest.py)."""
    return shared_cadre


@pytest.fixture
def fake(_fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    """The fake model server, emptied; the utility model (chat names) always answers."""
    _fake_llm_server.reset()
    _fake_llm_server.add_rule(model_is("util-model"), Reply("Layout check"))
    return _fake_llm_server


@pytest.fixture
def view(browser, request, cadre):
    """Opens fresh browser contexts' pages on the module's server (options as for
    open_page); each is checked for JavaScript errors and closed after the test."""
    opened = []

    def open_view(url: str | None = None, **options: object):
        pages = open_page(browser, request, url or cadre.url, **options)
        page = next(pages)
        page.set_default_timeout(WAIT_MS)
        opened.append(pages)
        return page

    yield open_view
    for pages in opened:
        next(pages, None)


def send(page, text: str) -> None:
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("send").click()


@pytest.fixture(scope="module")
def busy_chat(browser, cadre, _fake_llm_server: FakeLLMServer) -> str:
    """The id of a chat whose log holds items of many kinds: a user message, an
    unusable reply's warning, a delegation, a markdown answer with code, a stopped
    step and an error."""
    llm = _fake_llm_server
    llm.reset()
    llm.add_rule(model_is("util-model"), Reply("Layout check"))
    llm.script(
        Reply("not a reply the agent can use"),
        Reply(
            reply(
                "call_subordinate",
                headline="Asking a researcher",
                message="Find X.",
                profile="researcher",
                reset=True,
            )
        ),
        Reply(answer("X is in Paris.")),
        Reply(answer(ANSWER_MD)),
    )
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(cadre.url)
    page.get_by_test_id("new-chat").click()
    send(page, "Where is X?")
    page.locator(f'{ITEM}[data-type="response"]').filter(has_text="the plan").wait_for()
    # A step cut short: drawn as unfinished (once drawn faded, below AA contrast).
    llm.script(Reply(answer("A slow answer. " * 60), chunk_size=4, delay=0.1))
    send(page, "Slowly, please.")
    page.locator(ITEM).filter(has_text="A slow answer.").first.wait_for()
    page.get_by_test_id("stop").click()
    page.locator(f"{ITEM}.is-unfinished").first.wait_for()
    page.locator('[data-testid="status-line"][data-state="idle"]').wait_for(state="attached")
    llm.script(Fail(500, times=10))
    send(page, "And again?")
    page.locator(f'{ITEM}[data-type="error"]').first.wait_for()
    chat_id = page.locator('[data-testid="chat-item"][aria-current="true"]').get_attribute(
        "data-chat-id"
    )
    context.close()
    return chat_id


def show_chat(page, chat_id: str) -> None:
    """Open `chat_id` from the chat list (from its drawer on a phone)."""
    item = page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"]')
    item.wait_for(state="attached")
    if not item.is_visible():
        page.get_by_test_id("chats-toggle").click()
    item.click()
    page.locator(f'{ITEM}[data-type="error"]').first.wait_for()


def open_from_drawer(page, drawer: str, button: str) -> None:
    """Click `button`, opening its drawer first where it is one (closing another)."""
    target = page.get_by_test_id(button)
    if not target.is_visible():
        if page.locator(".app[data-drawer]").count():
            page.keyboard.press("Escape")
        page.get_by_test_id(f"{drawer}-toggle").click()
    target.click()


def no_blocking_violation(page, selector: str | None = None) -> None:
    found = axe_violations(page, selector)
    assert not found, f"axe on {selector or 'the page'}:\n{describe(found)}"


def overlaps(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])  # fmt: skip


def fits_viewport(page, target) -> bool:
    """Whether `target` (a locator or a data-testid) lies wholly inside the viewport."""
    locator = page.get_by_test_id(target) if isinstance(target, str) else target
    box = locator.bounding_box()
    size = page.viewport_size
    return (box is not None and box["x"] >= 0 and box["y"] >= 0
            and box["x"] + box["width"] <= size["width"]
            and box["y"] + box["height"] <= size["height"])  # fmt: skip


@pytest.mark.parametrize(
    ("viewport", "scheme"),
    [(DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light"), (PHONE, "dark")],
    ids=["desktop-light", "desktop-dark", "phone-light", "phone-dark"],
)
def test_axe_finds_no_serious_violation_in_the_main_views(view, busy_chat, viewport, scheme):
    page = view(viewport=viewport, color_scheme=scheme, bypass_csp=True)
    show_chat(page, busy_chat)
    no_blocking_violation(page)
    assert page.evaluate("document.documentElement.dataset.theme") == scheme

    open_from_drawer(page, "chats", "settings-open")
    page.locator('[data-testid="settings"] [data-testid^="field-"]').first.wait_for()
    no_blocking_violation(page, '[data-testid="settings"]')
    page.get_by_test_id("settings-cancel").click()

    open_from_drawer(page, "chats", "memory-open")
    page.locator('[data-testid="memory-empty"], [data-testid="memory-item"]').first.wait_for()
    no_blocking_violation(page, '[data-testid="memory"]')
    page.get_by_test_id("memory-close").click()

    open_from_drawer(page, "agents", "context-open")
    page.get_by_test_id("context-message").first.wait_for()
    no_blocking_violation(page, '[data-testid="context"]')
    page.get_by_test_id("context-close").click()


@pytest.mark.parametrize(("viewport", "scheme"), [(DESKTOP, "light"), (PHONE, "dark")],
                         ids=["desktop-light", "phone-dark"])  # fmt: skip
def test_the_first_run_banner_leaves_the_composer_in_view(view, cadre, fake, viewport, scheme):
    page = view("about:blank", viewport=viewport, color_scheme=scheme, bypass_csp=True)

    # As on a first run on the built-in model: the server's own status, with
    # `embedded` set (this module's server has a provider configured).
    def embedded(route):
        status = route.fetch().json()
        route.fulfill(json={**status, "embedded": True})

    page.route("**/api/setup", embedded)
    page.goto(cadre.url)
    page.get_by_test_id("model-banner").wait_for()
    page.get_by_test_id("setup").wait_for()  # opens by itself on a first visit
    no_blocking_violation(page, '[data-testid="setup"]')
    page.get_by_test_id("setup-later").click()
    page.get_by_test_id("setup").wait_for(state="hidden")

    for testid in ("message-input", "send", "pause", "nudge", "stop"):
        assert fits_viewport(page, testid), f"{testid} is outside the viewport"
    attach = page.locator("label", has=page.get_by_test_id("attach"))
    assert fits_viewport(page, attach), "Attach is outside the viewport"
    sizes = page.evaluate(
        "[document.documentElement.scrollHeight, document.documentElement.scrollWidth,"
        " innerHeight, innerWidth]"
    )
    assert sizes[0] <= sizes[2] and sizes[1] <= sizes[3], f"the page scrolls: {sizes}"


@pytest.mark.parametrize("width", [390, 320])
def test_a_phone_gets_one_column_and_a_usable_composer(view, fake, width):
    page = view(viewport={"width": width, "height": 844})
    page.get_by_test_id("message-input").wait_for()
    scroll = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert scroll[0] <= scroll[1], f"the page scrolls sideways: {scroll}"
    box = page.get_by_test_id("message-input").bounding_box()
    assert box["width"] >= width - 40, f"the message box is {box['width']} px wide"
    assert not page.get_by_test_id("sidebar").is_visible()
    assert not page.get_by_test_id("agents-panel").is_visible()

    # The chat list, as a drawer: opened, focus inside, Escape closes, focus back.
    toggle = page.get_by_test_id("chats-toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    page.get_by_test_id("new-chat").wait_for()
    assert page.evaluate("document.getElementById('sidebar').contains(document.activeElement)")
    page.keyboard.press("Escape")
    page.get_by_test_id("sidebar").wait_for(state="hidden")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.dataset.testid") == "chats-toggle"

    # New chat from the drawer: it closes, and the message box has the focus.
    toggle.click()
    page.get_by_test_id("new-chat").click()
    page.get_by_test_id("sidebar").wait_for(state="hidden")
    page.wait_for_function(MESSAGE_BOX_FOCUSED)

    fake.script(Reply(answer(f"Hello from a {width} px screen.")))
    page.keyboard.type("Hello?")
    assert fits_viewport(page, "send")
    page.get_by_test_id("send").click()
    page.locator(f'{ITEM}[data-type="response"]').filter(
        has_text=f"Hello from a {width} px screen.").wait_for()  # fmt: skip
    scroll = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert scroll[0] <= scroll[1], f"the page scrolls sideways with a log: {scroll}"

    # The agents panel, as a drawer with a Close button.
    agents = page.get_by_test_id("agents-toggle")
    agents.click()
    assert agents.get_attribute("aria-expanded") == "true"
    page.get_by_test_id("tree-agent").first.wait_for()
    assert page.get_by_test_id("agents-panel").bounding_box()["width"] <= width
    page.get_by_test_id("agents-close").click()
    page.get_by_test_id("agents-panel").wait_for(state="hidden")
    assert agents.get_attribute("aria-expanded") == "false"
    # Picking an agent there closes it: its items show in the log.
    agents.click()
    page.get_by_test_id("tree-agent").first.click()
    page.get_by_test_id("agents-panel").wait_for(state="hidden")
    assert page.get_by_test_id("filter-bar").inner_text().startswith("Showing only A0")


def body_background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


# Records the theme as the <body> element appears: set before the first paint.
THEME_AT_BODY = """
new MutationObserver((_, observer) => {
  if (!document.body) return;
  window.themeAtBody = document.documentElement.dataset.theme || "";
  observer.disconnect();
}).observe(document, {childList: true, subtree: true});
"""
DARK_BG = "rgb(13, 17, 23)"
LIGHT_BG = "rgb(246, 247, 249)"


def test_dark_mode_follows_the_system_and_the_switch_overrides_it(view):
    page = view(color_scheme="dark")
    page.add_init_script(THEME_AT_BODY)
    page.reload()
    page.get_by_test_id("message-input").wait_for()
    assert page.evaluate("window.themeAtBody") == "dark"
    assert body_background(page) == DARK_BG
    select = page.get_by_test_id("theme-select")
    assert select.input_value() == "system"

    select.select_option("light")
    assert body_background(page) == LIGHT_BG
    page.reload()
    page.get_by_test_id("message-input").wait_for()
    assert page.evaluate("window.themeAtBody") == "light"  # remembered, no dark flash
    assert page.get_by_test_id("theme-select").input_value() == "light"

    page.emulate_media(color_scheme="light")
    page.get_by_test_id("theme-select").select_option("dark")
    assert body_background(page) == DARK_BG
    page.get_by_test_id("theme-select").select_option("system")
    assert body_background(page) == LIGHT_BG  # the (now light) system again
    page.emulate_media(color_scheme="dark")
    page.wait_for_function(
        "bg => getComputedStyle(document.body).backgroundColor === bg", arg=DARK_BG
    )
    assert page.evaluate("localStorage.getItem('cadre.theme')") is None


def test_the_message_box_has_the_focus_on_load_and_after_new_chat(view, fake):
    page = view()
    page.wait_for_function(MESSAGE_BOX_FOCUSED)
    page.get_by_test_id("new-chat").click()
    page.wait_for_function(MESSAGE_BOX_FOCUSED)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_toast_never_covers_the_composer(view, fake, viewport, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps({"not": "a chat"}))
    page = view(viewport=viewport)
    page.get_by_test_id("message-input").wait_for()
    page.get_by_test_id("chat-import").set_input_files(str(bad))
    toast = page.get_by_test_id("toast").first
    toast.wait_for()
    toast_box = toast.bounding_box()
    for testid in ("message-input", "send"):
        box = page.get_by_test_id(testid).bounding_box()
        assert not overlaps(toast_box, box), f"the toast covers {testid}"
    composer = page.locator(".composer-bar").bounding_box()
    assert not overlaps(toast_box, composer), "the toast covers the composer's buttons"
    assert fits_viewport(page, toast)
