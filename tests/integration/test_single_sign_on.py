"""Single sign-on against a real run_ui.py: an OpenID Connect provider of the test's own
(tests/support/oidc_provider.py: authlib's server classes, real signed ID tokens, a JWKS,
on loopback), whose code flow a browser-like requests session follows redirect by
redirect; and a reverse proxy's login header, believed from `trusted_proxies` alone.

One provider and one server serve the module; each test signs in people of its own."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
from requests.adapters import HTTPAdapter

from tests.support.live_web import csrf_token, live_server, log_in, log_text
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcProvider, Person
from tests.support.server_process import ServerProcess

ADMIN, ADMIN_PASSWORD, ADMIN_KEY = "root", "the admin's password", "the-admins-key"
#: Another loopback address: a peer that is not in trusted_proxies (which holds 127.0.0.1).
STRANGER = "127.0.0.2"
_numbers = itertools.count(1)


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    started = OidcProvider().start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server, provider) -> Iterator[ServerProcess]:
    server = live_server(
        tmp_path_factory.mktemp("sso"), _fake_llm_server.base_url,
        auth_login=ADMIN, auth_password=ADMIN_PASSWORD, api_key=ADMIN_KEY,
        oidc_issuer=provider.issuer, oidc_client_id=CLIENT_ID, oidc_client_secret=CLIENT_SECRET,
        oidc_provider_name="Test SSO", oidc_admin_value="cadre-admins",
        sso_header_login="true", trusted_proxies="127.0.0.1",
    )  # fmt: skip
    yield server
    server.stop()


def person(groups: list[str] | None = None, **fields: str) -> Person:
    number = next(_numbers)
    return Person(
        **{
            "sub": f"sub-{number}",
            "preferred_username": f"Person{number}",
            "email": f"person{number}@example.org",
            **fields,
        },
        groups=groups or [],
    )


def users(cadre: ServerProcess) -> dict[str, dict[str, Any]]:
    listed = requests.get(f"{cadre.url}/api/v1/users", headers={"X-API-Key": ADMIN_KEY},
                          timeout=30)  # fmt: skip
    assert listed.status_code == 200, listed.text
    return {user["name"]: user for user in listed.json()["users"]}


def sign_in(cadre: ServerProcess, provider: OidcProvider, who: Person,
            browser: requests.Session | None = None,
            start: str = "/login/oidc") -> tuple[requests.Session, requests.Response]:  # fmt: skip
    """A browser that followed the whole code flow (from `start`), and the last answer."""
    provider.person = who
    browser = browser or requests.Session()
    answer = browser.get(f"{cadre.url}{start}", timeout=30)
    return browser, answer


def admin(cadre: ServerProcess) -> requests.Session:
    browser = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    assert browser.last.status_code == 200, browser.last.text
    return browser


def is_logged_in_as(browser: requests.Session, cadre: ServerProcess, name: str) -> bool:
    """Their own keys are theirs to list (another's are a 404; nobody's a 401)."""
    return browser.get(f"{cadre.url}/api/users/{name}/keys", timeout=30).status_code == 200


def test_the_login_page_offers_the_provider(cadre):
    methods = requests.get(f"{cadre.url}/api/login/methods", timeout=30)
    assert methods.status_code == 200
    assert methods.json() == {"oidc": {"name": "Test SSO", "url": "/login/oidc"}}


def test_the_code_flow_makes_a_member_on_first_login_and_logs_them_in(cadre, provider):
    who = person()
    asked = len(provider.asked)
    browser, answer = sign_in(cadre, provider, who)
    # Cadre -> the provider -> Cadre's callback, whose page moves on to the app's start (a
    # page, not a redirect: tests/e2e/test_single_sign_on_ui.py says why).
    assert [urlsplit(r.url).path for r in answer.history] == ["/login/oidc", "/authorize"]
    assert answer.status_code == 200 and urlsplit(answer.url).path == "/login/oidc/callback"
    assert '<meta http-equiv="refresh" content="0; url=/">' in answer.text
    assert browser.get(f"{cadre.url}/", allow_redirects=False, timeout=30).status_code == 200
    authorize = urlsplit(answer.history[1].url)
    sent = dict(parse_qsl(authorize.query))
    assert sent["code_challenge_method"] == "S256" and sent["nonce"] and sent["state"]
    assert {"/token", "/jwks"} <= set(provider.asked[asked:])
    name = who.preferred_username.lower()
    made = users(cadre)[name]
    assert (made["role"], made["source"], made["email"]) == ("member", "oidc", who.email)
    assert is_logged_in_as(browser, cadre, name)
    assert not is_logged_in_as(browser, cadre, ADMIN)
    # A change needs the session's CSRF token, as after a password login.
    token = csrf_token(browser, cadre)
    keyed = browser.post(f"{cadre.url}/api/users/{name}/keys", json={"label": "cli"},
                         headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip
    assert keyed.status_code == 201, keyed.text
    entries = admin(cadre).get(f"{cadre.url}/api/audit", timeout=30).json()["entries"]
    assert any(e["event"] == "login" and e["actor"] == name
               and e["details"] == {"method": "oidc"} for e in entries)  # fmt: skip
    assert f"single sign-on: {name!r} logged in" in log_text(cadre)


def test_a_second_login_is_the_same_account(cadre, provider):
    who = person()
    sign_in(cadre, provider, who)
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 200
    assert is_logged_in_as(browser, cadre, who.preferred_username.lower())
    assert sum(n == who.preferred_username.lower() for n in users(cadre)) == 1


def test_the_admin_claim_makes_an_admin_and_is_applied_at_every_login(cadre, provider):
    who = person(groups=["staff", "cadre-admins"])
    name = who.preferred_username.lower()
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 200
    # The groups came from the userinfo endpoint: the ID token lacks them.
    assert users(cadre)[name]["role"] == "admin"
    assert browser.get(f"{cadre.url}/api/settings", timeout=30).status_code == 200
    who.groups = ["staff"]
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 200
    assert users(cadre)[name]["role"] == "member"
    assert browser.get(f"{cadre.url}/api/settings", timeout=30).status_code == 403


def test_the_email_names_someone_without_a_preferred_username(cadre, provider):
    who = person(preferred_username="", email=f"Edith{next(_numbers)}@Example.org")
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 200
    assert is_logged_in_as(browser, cadre, who.email.lower())
    assert users(cadre)[who.email.lower()]["source"] == "oidc"


def test_a_disabled_oidc_user_is_refused(cadre, provider):
    who = person()
    name = who.preferred_username.lower()
    sign_in(cadre, provider, who)
    disabled = requests.patch(f"{cadre.url}/api/v1/users/{name}", json={"disabled": True},
                              headers={"X-API-Key": ADMIN_KEY}, timeout=30)  # fmt: skip
    assert disabled.status_code == 200, disabled.text
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 403
    assert "disabled" in answer.text and "ask an admin" in answer.text
    assert "Traceback" not in answer.text
    assert not is_logged_in_as(browser, cadre, name)
    assert "single sign-on: failed" in log_text(cadre)


def test_a_provider_never_opens_an_account_made_with_a_password(cadre, provider):
    """Someone the provider calls by the admin's name is someone else: an account of their
    own, under a name made unique, never the admin's."""
    browser, answer = sign_in(cadre, provider, person(preferred_username=ADMIN))
    assert answer.status_code == 200
    assert not is_logged_in_as(browser, cadre, ADMIN)
    assert is_logged_in_as(browser, cadre, f"{ADMIN}-2")
    listed = users(cadre)
    assert listed[ADMIN]["source"] == "password"
    assert (listed[f"{ADMIN}-2"]["source"], listed[f"{ADMIN}-2"]["role"]) == ("oidc", "member")


def test_two_people_the_provider_gives_one_name_get_an_account_each(cadre, provider):
    """The provider's key for a person is their subject (`sub`), not a name they may
    choose: a second person calling themselves the same never gets into the first's."""
    first = person()
    name = first.preferred_username.lower()
    sign_in(cadre, provider, first)
    other = person(preferred_username=first.preferred_username)
    browser, answer = sign_in(cadre, provider, other)
    assert answer.status_code == 200
    assert not is_logged_in_as(browser, cadre, name)
    assert is_logged_in_as(browser, cadre, f"{name}-2")
    # The first one still comes back to their own.
    again, _ = sign_in(cadre, provider, first)
    assert is_logged_in_as(again, cadre, name)
    assert "made unique" in log_text(cadre)


def test_a_name_changed_at_the_provider_keeps_the_account(cadre, provider):
    who = person()
    name = who.preferred_username.lower()
    sign_in(cadre, provider, who)
    who.preferred_username = f"Renamed{next(_numbers)}"
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 200
    assert is_logged_in_as(browser, cadre, name)
    assert who.preferred_username.lower() not in users(cadre)


def test_a_tampered_state_is_refused(cadre, provider):
    provider.person = who = person()
    browser = requests.Session()
    to_provider = browser.get(f"{cadre.url}/login/oidc", allow_redirects=False, timeout=30)
    assert to_provider.status_code == 302
    back = browser.get(to_provider.headers["Location"], allow_redirects=False, timeout=30)
    callback = urlsplit(back.headers["Location"])
    query = dict(parse_qsl(callback.query))
    tampered = urlunsplit(callback._replace(query=urlencode({**query, "state": "forged"})))
    answer = browser.get(tampered, allow_redirects=False, timeout=30)
    assert answer.status_code == 400
    assert "state does not match" in answer.text and "start the sign-in again" in answer.text
    assert not is_logged_in_as(browser, cadre, who.preferred_username.lower())
    assert who.preferred_username.lower() not in users(cadre)
    assert "state mismatch" in log_text(cadre)
    # Nor does the right state work from a browser that did not start the sign-in.
    stranger = requests.Session()
    assert stranger.get(back.headers["Location"], allow_redirects=False,
                        timeout=30).status_code == 400  # fmt: skip
    # The answer to a program (no HTML wanted) is JSON in the same words.
    as_json = requests.get(tampered, headers={"Accept": "application/json"}, timeout=30)
    assert as_json.status_code == 400 and "error" in as_json.json()


def test_an_id_token_meant_for_another_client_is_refused(cadre, provider):
    who = person()
    provider.audience = "another-client"
    try:
        browser, answer = sign_in(cadre, provider, who)
    finally:
        provider.audience = None
    assert answer.status_code == 401
    assert "ID token did not pass" in answer.text and "start the sign-in again" in answer.text
    assert not is_logged_in_as(browser, cadre, who.preferred_username.lower())
    assert "ClaimError" in log_text(cadre)  # the audience (and azp) checks, in the log


# -- a risky change, for someone with no password of Cadre's --------------------------------


def change_a_program(browser: requests.Session, cadre: ServerProcess,
                     program: str = "/usr/bin/env") -> requests.Response:  # fmt: skip
    """A change that lets the host run another program (server/security/reauth.py)."""
    token = csrf_token(browser, cadre)
    return browser.post(f"{cadre.url}/api/settings", json={"browser_executable": program},
                        headers={"X-CSRF-Token": token}, timeout=30)  # fmt: skip


def test_a_single_sign_on_admin_confirms_a_risky_change_by_signing_in_again(cadre, provider):
    """No password to give: a sign-in at the provider within the last minutes confirms it is
    them. Signed in to Cadre now on a session they opened at the provider an hour ago, they
    are asked to sign in again, which makes the provider ask them again."""
    who = person(groups=["cadre-admins"])
    who.authenticated_at = time.time() - 3600
    browser, answer = sign_in(cadre, provider, who)
    assert answer.status_code == 200
    refused = change_a_program(browser, cadre)
    assert refused.status_code == 403
    said = refused.json()
    assert said["sign_in_required"] == ["browser_executable"]
    assert said["sign_in_url"] == "/login/oidc?again=1"
    assert "sign in again through Test SSO" in said["error"] and "5 minutes" in said["error"]
    assert "password_required" not in said  # they have none to give

    asked = provider.asked_again
    browser, again = sign_in(cadre, provider, who, browser, said["sign_in_url"])
    assert again.status_code == 200 and provider.asked_again == asked + 1
    query = provider.authorize_queries[-1]
    assert (query["prompt"], query["max_age"]) == ("login", "300")
    changed = change_a_program(browser, cadre)
    assert changed.status_code == 200, changed.text
    assert changed.json()["browser_executable"] == "/usr/bin/env"
    undone = change_a_program(browser, cadre, "")
    assert undone.status_code == 200, undone.text


# -- a reverse proxy's login header ------------------------------------------------------


class _From(HTTPAdapter):
    """Connections from another local address than 127.0.0.1."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def proxied(header: str, value: str, address: str = "127.0.0.1") -> requests.Session:
    """A browser behind a proxy at `address` that names the person in `header`."""
    browser = requests.Session()
    browser.headers[header] = value
    if address != "127.0.0.1":
        browser.mount("http://", _From(address))
    return browser


def test_a_trusted_proxys_header_logs_the_person_in(cadre):
    name = f"proxied{next(_numbers)}"
    browser = proxied("Remote-User", name)
    page = browser.get(f"{cadre.url}/", allow_redirects=False, timeout=30)
    assert page.status_code == 200  # no redirect to the login page
    assert is_logged_in_as(browser, cadre, name)
    assert (users(cadre)[name]["source"], users(cadre)[name]["role"]) == ("header", "member")
    # A change still needs the CSRF token, which the page gets as always.
    url = f"{cadre.url}/api/users/{name}/keys"
    assert browser.post(url, json={"label": "x"}, timeout=30).status_code == 403
    token = csrf_token(browser, cadre)
    assert browser.post(url, json={"label": "x"}, headers={"X-CSRF-Token": token},
                        timeout=30).status_code == 201  # fmt: skip
    # One login on record, not one per request: the session is reused.
    entries = admin(cadre).get(f"{cadre.url}/api/audit", timeout=30).json()["entries"]
    logins = [e for e in entries if e["event"] == "login" and e["actor"] == name]
    assert [e["details"] for e in logins] == [{"method": "header"}]


def test_the_email_header_names_the_person_when_the_user_header_is_missing(cadre):
    email = f"mail{next(_numbers)}@example.org"
    browser = proxied("Remote-Email", email)
    assert is_logged_in_as(browser, cadre, email)


def test_the_header_from_an_address_not_in_trusted_proxies_is_ignored(cadre):
    name = f"spoofed{next(_numbers)}"
    browser = proxied("Remote-User", name, STRANGER)
    for _ in range(3):
        refused = browser.get(f"{cadre.url}/api/users/{name}/keys", timeout=30)
        assert refused.status_code == 401 and refused.json()["error"] == "log in first"
    # Nor does it make anyone the admin: the header is not read at all.
    admin = proxied("Remote-User", ADMIN, STRANGER)
    assert admin.get(f"{cadre.url}/api/settings", timeout=30).status_code == 401
    assert name not in users(cadre)
    told = [line for line in log_text(cadre).splitlines() if f"from {STRANGER}, which" in line]
    assert len(told) == 1, told  # once per address


def test_a_disabled_user_named_by_the_proxy_is_refused_whatever_their_session(cadre):
    name = f"leaving{next(_numbers)}"
    browser = proxied("Remote-User", name)
    assert is_logged_in_as(browser, cadre, name)
    disabled = requests.patch(f"{cadre.url}/api/v1/users/{name}", json={"disabled": True},
                              headers={"X-API-Key": ADMIN_KEY}, timeout=30)  # fmt: skip
    assert disabled.status_code == 200
    refused = browser.get(f"{cadre.url}/api/users/{name}/keys", timeout=30)
    assert refused.status_code == 401 and "disabled" in refused.json()["error"]
    # Another's session cookie in the same browser does not outvote the proxy's word.
    theirs = proxied("Remote-User", f"other{next(_numbers)}")
    assert theirs.get(f"{cadre.url}/", timeout=30).status_code == 200
    browser.cookies.update(theirs.cookies)
    assert browser.get(f"{cadre.url}/", allow_redirects=False, timeout=30).status_code == 302


def test_an_admin_the_proxy_names_is_told_how_to_confirm_a_risky_change(cadre):
    """Cadre cannot make a proxy ask someone again: without a password of Cadre's, the
    answer says what they can do instead."""
    name = f"proxyadmin{next(_numbers)}"
    browser = proxied("Remote-User", name)
    assert is_logged_in_as(browser, cadre, name)
    made = requests.patch(f"{cadre.url}/api/v1/users/{name}", json={"role": "admin"},
                          headers={"X-API-Key": ADMIN_KEY}, timeout=30)  # fmt: skip
    assert made.status_code == 200, made.text
    assert is_logged_in_as(browser, cadre, name)  # a new session, as an admin (a page loads)
    refused = change_a_program(browser, cadre)
    assert refused.status_code == 403
    said = refused.json()["error"]
    assert "proxy" in said and "ask an admin to set a password" in said.lower()
    # Given a password, they confirm with it, as anyone with one does.
    given = requests.patch(f"{cadre.url}/api/v1/users/{name}", json={"password": "a password now"},
                           headers={"X-API-Key": ADMIN_KEY}, timeout=30)  # fmt: skip
    assert given.status_code == 200, given.text
    assert is_logged_in_as(browser, cadre, name)
    asked = change_a_program(browser, cadre)
    assert asked.status_code == 403 and asked.json()["password_required"] == ["browser_executable"]


def test_the_client_secret_is_masked_like_every_secret(cadre):
    shown = admin(cadre).get(f"{cadre.url}/api/settings", timeout=30).json()
    assert shown["oidc_client_secret"] == "***"
    assert shown["oidc_issuer"].startswith("http://localhost:")
    assert CLIENT_SECRET not in log_text(cadre)
