"""Single sign-on seen from Chromium: the login page's "Log in with <provider>" button, and
the whole OpenID Connect code flow to a working page.

The provider (tests/support/oidc_provider.py) is at http://localhost:<port>, another site
than Cadre's http://127.0.0.1:<port>: its redirect back is a navigation from another
site, as with a real provider, and the browser's own cookie rules (the session cookie is
SameSite=Strict) must still end at a logged-in page."""

from __future__ import annotations

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
        oidc_provider_name="Example ID",
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
