"""Security seen from Chromium: login, inert hostile HTML, secrets that never reach the page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import CHAT_NAME, open_page
from tests.e2e.test_chat_ui import RESPONSE, last_response, new_chat, send
from tests.support.agents import answer
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import live_server, settings_kept, warm_up
from tests.support.server_process import ServerProcess

TOKEN = "tok-9f8e7d6c5b4a"
SHOTS = Path("/tmp/shots-password")
HOSTILE = (
    'Look: <img src=x onerror="window.__pwned=1"> and '
    "<script>window.__pwned2=1</script> and [link](javascript:window.__pwned3=1)"
)
# Every text node and attribute value the page ever shows, kept as it changes.
RECORD_DOM = """
window.__seen = [];
new MutationObserver((records) => {
  for (const r of records) {
    if (r.type === "characterData") window.__seen.push(r.target.data);
    if (r.type === "attributes") window.__seen.push(String(r.target.getAttribute(r.attributeName)));
    for (const node of r.addedNodes) window.__seen.push(node.textContent || "");
  }
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


@pytest.fixture(scope="module")
def cadre(shared_cadre: ServerProcess) -> ServerProcess:
    """One run_ui.py for the module (tests/e2e/conftest.py)."""
    return shared_cadre


@pytest.fixture
def page(shared_page):
    return shared_page


def start_locked(folder: Path, fake: FakeLLMServer) -> ServerProcess:
    """run_ui.py with a login and a secret configured."""
    return live_server(folder, fake.base_url, llm_retry_delay="0.01",
                       auth_login="ada", auth_password="correct horse",
                       secrets=json.dumps({"SERVICE_TOKEN": TOKEN}))  # fmt: skip


@pytest.fixture(scope="module")
def locked(_fake_llm_server, tmp_path_factory) -> Iterator[ServerProcess]:
    """A locked run_ui.py for the module's tests that chat: each logs in from a fresh
    browser context, so one test's session is never another's."""
    server = start_locked(tmp_path_factory.mktemp("locked"), _fake_llm_server)
    warm_up(server, _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def locked_without_chats(_fake_llm_server, tmp_path_factory) -> Iterator[ServerProcess]:
    """A locked run_ui.py on which no chat is ever made: the page stays at `/` after its
    login, as on a fresh install (the tests of a session that ends are about that page)."""
    server = start_locked(tmp_path_factory.mktemp("locked-empty"), _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture
def locked_page(browser, request, locked, llm):
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))  # chat names: never a scripted reply
    yield from open_page(browser, request, locked.url)


@pytest.fixture
def empty_locked_page(browser, request, locked_without_chats):
    yield from open_page(browser, request, locked_without_chats.url)


def log_in(page, password: str) -> None:
    page.get_by_test_id("login-name").fill("ada")
    page.get_by_test_id("login-password").fill(password)
    page.get_by_test_id("login-submit").click()


def test_under_login_hostile_html_is_inert_and_a_secret_never_reaches_the_page(locked_page, llm):
    page = locked_page
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(str(data))))
    page.add_init_script(RECORD_DOM)
    assert page.url.endswith("/login")
    log_in(page, "wrong")
    page.get_by_test_id("login-error").wait_for()
    assert "new-chat" not in page.content()
    log_in(page, "correct horse")
    page.wait_for_url(page.url.removesuffix("login"))  # and its modules loaded

    llm.script(Reply(answer(f"{HOSTILE} and the token is {TOKEN}.")))
    new_chat(page)
    send(page, f"Use my token {TOKEN} <b onmouseover=alert(1)>hi</b>")
    page.locator(RESPONSE).filter(has_text="the token is ***").wait_for()

    body = last_response(page)
    assert body.locator("script").count() == 0 and body.locator("[onerror]").count() == 0
    for link in body.locator("a").all():
        assert not (link.get_attribute("href") or "").lower().startswith("javascript")
        link.click()
    page.wait_for_timeout(300)
    assert page.evaluate("() => [window.__pwned, window.__pwned2, window.__pwned3]") == [
        None, None, None]  # fmt: skip
    user = page.locator('[data-testid="log-item"][data-type="user"]').last
    assert user.locator("b").count() == 0 and "Use my token ***" in user.inner_text()

    page.get_by_test_id("settings-open").click()
    page.get_by_test_id("field-chat_model").wait_for()
    seen = page.evaluate("() => window.__seen")
    assert any("the token is ***" in text for text in seen)
    assert all(TOKEN not in text for text in seen)
    assert TOKEN not in page.content()
    assert frames and all(TOKEN not in frame for frame in frames)
    assert TOKEN not in json.dumps([r.body for r in llm.chat_requests()])


def test_the_api_key_is_shown_and_replaced_from_settings(page, cadre):
    stored = json.loads((cadre.usr_dir / "settings.json").read_text())["api_key"]
    page.get_by_test_id("settings-open").click()
    field = page.get_by_test_id("field-api_key")
    assert field.input_value() == "***" and field.get_attribute("type") == "password"
    page.get_by_test_id("api-key-reveal").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=field-api_key]').value !== '***'"
    )
    assert field.input_value() == stored and field.get_attribute("type") == "text"

    page.get_by_test_id("api-key-regenerate").click()
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=field-api_key]').value !== {stored!r}"
    )
    new = json.loads((cadre.usr_dir / "settings.json").read_text())["api_key"]
    assert new != stored and field.input_value() == new
    page.get_by_test_id("settings-save").click()
    page.get_by_test_id("settings-save").wait_for(state="hidden")
    assert json.loads((cadre.usr_dir / "settings.json").read_text())["api_key"] == new


@pytest.mark.parametrize("chat_open", [False, True])
def test_a_page_whose_session_ends_goes_back_to_the_login(empty_locked_page, chat_open):
    """Also with a chat open: going to the page's own address (`/#/chat/<id>`) only
    changed the `#` part, so the page never reloaded and sat there "reconnecting"."""
    page = empty_locked_page
    log_in(page, "correct horse")
    page.wait_for_url(page.url.removesuffix("login"))
    page.get_by_test_id("new-chat").wait_for()
    if chat_open:
        page.get_by_test_id("new-chat").click()
        page.wait_for_url("**/#/chat/*")
    # Logged out from another tab: the server closes this page's socket, the page reloads.
    # The logout is sent from outside the page (with its cookies): a fetch inside it lost
    # the race with that reload 1 CI run in many ("Execution context was destroyed").
    origin = page.url.split("/#")[0].rstrip("/")
    outside = page.context.request
    token = outside.get(f"{origin}/api/csrf").json()["token"]
    assert outside.post(f"{origin}/logout", headers={"X-CSRF-Token": token}).ok
    page.wait_for_url(re.compile(r"/login(#/chat/\w+)?$"))  # the login keeps the chat
    page.get_by_test_id("login-form").wait_for()


def test_a_page_whose_socket_is_refused_after_a_logout_goes_to_the_login(empty_locked_page):
    """Logged out (in another tab) before this page's socket reached the server: the server
    refuses the socket, and the page must not sit there disconnected."""
    page = empty_locked_page
    held = []  # the page's socket waits here until the test lets it through
    page.route_web_socket("**/socket.io/**", lambda ws: held.append(ws))
    log_in(page, "correct horse")
    page.wait_for_url(page.url.removesuffix("login"))
    page.wait_for_function("() => document.readyState === 'complete'")
    page.evaluate(
        """async () => {
            const {token} = await (await fetch("/api/csrf")).json();
            await fetch("/logout", {method: "POST", headers: {"X-CSRF-Token": token}});
        }"""
    )
    assert held, "the page opened no socket"
    held[0].connect_to_server()  # only now it reaches the server, which refuses it
    page.wait_for_url("**/login")
    page.get_by_test_id("login-form").wait_for()


def test_the_login_page_keeps_the_theme_and_the_chat_it_was_opened_for(locked_page):
    page = locked_page
    log_in(page, "correct horse")
    page.wait_for_url(page.url.removesuffix("login"))
    new_chat(page)
    page.wait_for_url("**/#/chat/*")
    chat_url = page.url
    page.context.clear_cookies()  # the session is gone: the chat's address now needs a login
    page.emulate_media(color_scheme="dark")
    page.goto("about:blank")  # from elsewhere: a new load of the chat's address
    page.goto(chat_url)
    page.get_by_test_id("login-form").wait_for()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    log_in(page, "correct horse")
    page.wait_for_url(chat_url)  # back on the chat it was opened for, not the first one


@pytest.fixture
def locked_axe_page(browser, request, locked, llm):
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    yield from open_page(browser, request, locked.url, bypass_csp=True)  # axe runs in it


def test_a_program_setting_is_saved_only_with_the_password_given_in_a_dialog(
    locked_axe_page, locked
):
    """With a login, a change of a program the host runs asks for the password again
    (server/security/reauth.py): a small labelled dialog over Settings; a wrong one is said, the
    right one saves. Screenshots at desktop and phone sizes go to /tmp/shots-password."""
    page = locked_axe_page
    log_in(page, "correct horse")
    page.wait_for_url(page.url.removesuffix("login"))
    stored = locked.usr_dir / "settings.json"
    with settings_kept(locked):
        page.get_by_test_id("settings-open").click()
        page.get_by_test_id("field-browser_executable").fill("/usr/bin/chromium")
        page.get_by_test_id("settings-save").click()
        dialog = page.get_by_test_id("password-dialog")
        dialog.wait_for()
        assert "Browser program" in page.get_by_test_id("password-text").inner_text()
        assert page.evaluate("() => document.activeElement.dataset.testid") == "password-input"
        assert dialog.get_by_label("Password", exact=True).get_attribute("type") == "password"
        found = axe_violations(page, '[data-testid="password-dialog"]')
        assert not found, f"axe on the password dialog:\n{describe(found)}"
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "password-1280.png"))

        page.get_by_test_id("password-input").fill("wrong horse")
        page.get_by_test_id("password-ok").click()
        page.get_by_test_id("password-wrong").wait_for()
        assert json.loads(stored.read_text())["browser_executable"] == ""  # not saved
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=str(SHOTS / "password-390.png"))
        page.get_by_test_id("password-input").fill("correct horse")
        page.keyboard.press("Enter")
        page.get_by_test_id("settings-save").wait_for(state="hidden")  # saved, Settings closed
        assert json.loads(stored.read_text())["browser_executable"] == "/usr/bin/chromium"
        assert dialog.is_hidden() and page.get_by_test_id("password-input").input_value() == ""
