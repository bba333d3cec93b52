"""Single sign-on seen from Chromium: the login page's "Log in with <provider>" button, and
the whole OpenID Connect code flow to a working page.

The provider (tests/support/oidc_provider.py) is at http://localhost:<port>, another site
than Cadre's http://127.0.0.1:<port>: its redirect back is a navigation from another
site, as with a real provider, and the browser's own cookie rules (the session cookie is
SameSite=Strict) must still end at a logged-in page."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import open_page
from tests.support.live_web import live_server
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcProvider, Person
from tests.support.server_process import ServerProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    started = OidcProvider().start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server, provider) -> Iterator[ServerProcess]:
    server = live_server(
        tmp_path_factory.mktemp("sso-ui"), _fake_llm_server.base_url,
        auth_login="ada", auth_password="correct horse",
        oidc_issuer=provider.issuer, oidc_client_id=CLIENT_ID, oidc_client_secret=CLIENT_SECRET,
        oidc_provider_name="Example ID", oidc_admin_value="cadre-admins",
    )  # fmt: skip
    yield server
    server.stop()


@pytest.fixture
def page(browser, request, cadre) -> Iterator[object]:
    yield from open_page(browser, request, f"{cadre.url}/login")


def test_log_in_with_the_provider_from_the_login_page(page, provider, cadre):
    provider.person = Person("sub-ui-1", "grace", "grace@example.org")
    button = page.get_by_test_id("login-oidc")
    button.wait_for()
    assert button.inner_text() == "Log in with Example ID"
    button.click()
    page.wait_for_url(f"{cadre.url}/")
    page.get_by_test_id("new-chat").wait_for()  # the app, logged in: its socket is up
    assert "/authorize" in provider.asked
    session = [c for c in page.context.cookies() if c["name"] == "session"]
    assert session and session[0]["sameSite"] == "Strict"


def test_a_provider_page_in_between_still_ends_logged_in(page, provider, cadre):
    """The provider's own login page sends the browser back: the redirect to the app then
    comes from another site, with which a SameSite=Strict cookie is not sent."""
    provider.person = Person("sub-ui-2", "heidi", "heidi@example.org")
    provider.asks = True
    try:
        page.get_by_test_id("login-oidc").click()
        page.locator("#approve").click()
        page.wait_for_url(f"{cadre.url}/")
        page.get_by_test_id("new-chat").wait_for()
    finally:
        provider.asks = False


def test_a_risky_change_by_someone_without_a_password_asks_them_to_sign_in_again(
    page, provider, cadre
):
    """An admin who signs in only through the provider, on a session they opened there an
    hour ago, changes a program Cadre runs: the page says to sign in again, its link goes
    through the provider (which asks them again), and the change is saved once made again."""
    who = Person("sub-ui-3", "ivan", "ivan@example.org", ["cadre-admins"])
    who.authenticated_at = time.time() - 3600
    provider.person = who
    page.get_by_test_id("login-oidc").click()
    page.wait_for_url(f"{cadre.url}/")
    page.get_by_test_id("new-chat").wait_for()

    def save_a_program() -> None:
        page.get_by_test_id("settings-open").click()
        page.get_by_test_id("field-browser_executable").fill("/usr/bin/chromium")
        page.get_by_test_id("settings-save").click()

    save_a_program()
    dialog = page.get_by_test_id("sign-in-dialog")
    dialog.wait_for()
    said = page.get_by_test_id("sign-in-text").inner_text()
    assert "Browser program" in said and "Sign in again through Example ID" in said
    assert page.get_by_test_id("password-dialog").count() == 0  # no password to ask for
    stored = cadre.usr_dir / "settings.json"
    assert json.loads(stored.read_text()).get("browser_executable", "") == ""
    asked = provider.asked_again
    page.get_by_test_id("sign-in-again").click()
    page.wait_for_url(f"{cadre.url}/")
    page.get_by_test_id("new-chat").wait_for()
    assert provider.asked_again == asked + 1

    save_a_program()
    page.get_by_test_id("settings-save").wait_for(state="hidden")  # saved, Settings closed
    assert json.loads(stored.read_text())["browser_executable"] == "/usr/bin/chromium"
