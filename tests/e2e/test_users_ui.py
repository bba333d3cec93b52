"""Accounts in Chromium: an admin's Users panel (add with a password, add with an invite
link that a new browser opens to choose a password and land in the app, disable, role,
delete), and a member's My account (their keys made, seen once, revoked; their password;
their own settings: secrets, models, MCP servers); what only an admin may use is not
offered to a member; axe finds nothing serious.

The test process's shared server with accounts (tests/support/shared_accounts.py) and one
browser serve the module, each test one walk. With USERS_SHOTS=<folder> the walks leave
screenshots there at desktop and phone sizes, to look at by hand.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from tests.e2e.conftest import CHAT_NAME, open_page
from tests.e2e.test_chat_ui import RESPONSE, last_response, new_chat, send
from tests.support import shared_accounts
from tests.support.agents import answer
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import Reply, model_is
from tests.support.mcp_servers import HttpMcpServer
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    with shared_accounts.for_module(accounts_server) as server:
        yield server


@pytest.fixture
def mcp(tmp_path) -> Iterator[HttpMcpServer]:
    """A remote MCP server of a member's own (the test server, over streamable HTTP)."""
    server = HttpMcpServer(tmp_path).wait_ready()
    yield server
    server.stop()


@contextmanager
def browsing(browser, request, url: str) -> Iterator[object]:
    """A page of a fresh browser context (its own cookies: its own login); axe may run in it."""
    pages = open_page(browser, request, url, bypass_csp=True)
    page = next(pages)
    try:
        yield page
    finally:
        next(pages, None)  # closes the context; fails on a JavaScript error of the page


def log_in(page, name: str, password: str) -> None:
    page.get_by_test_id("login-name").fill(name)
    page.get_by_test_id("login-password").fill(password)
    page.get_by_test_id("login-submit").click()
    page.locator("html[data-routed]").wait_for(state="attached")


def shot(page, name: str) -> None:
    """Screenshots at both sizes, when asked for (USERS_SHOTS): never part of the repository."""
    folder = os.environ.get("USERS_SHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(size)
        page.wait_for_timeout(150)
        page.screenshot(path=f"{folder}/{name}-{label}.png")
    page.set_viewport_size(DESKTOP)


def no_blocking_violation(page, selector: str) -> None:
    found = axe_violations(page, selector)
    assert not found, f"axe on {selector}:\n{describe(found)}"


def row(page, name: str):
    return page.locator(f"[data-testid=user-item][data-name='{name}']")


def api_status(cadre: ServerProcess, key: str) -> int:
    return requests.get(f"{cadre.url}/api/v1/chats", headers={"X-API-Key": key},
                        timeout=30).status_code  # fmt: skip


def log_in_status(cadre: ServerProcess, name: str, password: str) -> int:
    """A login's answer, from a browser of its own (a session nobody else shares)."""
    http = requests.Session()
    token = http.get(f"{cadre.url}/api/csrf", timeout=10).json()["token"]
    return http.post(f"{cadre.url}/login", headers={"X-CSRF-Token": token}, timeout=30,
                     json={"login": name, "password": password}).status_code  # fmt: skip


def test_an_admin_adds_invites_disables_promotes_and_deletes(browser, request, cadre, llm):
    llm.add_rule(model_is("util-model"), Reply(CHAT_NAME))
    with browsing(browser, request, cadre.url) as page:
        log_in(page, ADMIN, ADMIN_PASSWORD)
        page.get_by_test_id("users-open").click()
        me = row(page, ADMIN)
        me.wait_for()
        assert "You · the login in Settings" in me.get_by_test_id("user-item-state").inner_text()
        assert me.get_by_test_id("user-delete").count() == 0  # not oneself, not the login

        # With a password: a name left out, then a password too short, each said at its field.
        page.get_by_test_id("user-new").click()
        page.get_by_test_id("user-save").click()
        name_error = page.get_by_test_id("user-name-error")
        name_error.filter(has_text="Give them a login name.").wait_for()
        assert page.get_by_test_id("user-name").get_attribute("aria-invalid") == "true"
        page.get_by_test_id("user-name").fill("Ann")
        page.get_by_test_id("user-way-password").check()
        page.get_by_test_id("user-password").fill("short")
        page.get_by_test_id("user-save").click()
        password_error = page.get_by_test_id("user-password-error")
        password_error.filter(has_text="at least 8 characters").wait_for()
        assert name_error.is_hidden()  # typed in again: no longer said
        no_blocking_violation(page, '[data-testid="users"]')  # the form, a problem said
        page.get_by_test_id("user-password").fill("ann's password")
        password_error.wait_for(state="hidden")
        shot(page, "users-add")
        page.get_by_test_id("user-save").click()
        row(page, "ann").wait_for()  # lower-case, as logins are
        status = page.get_by_test_id("users-status")
        expect(status).to_contain_text("They log in as ann")
        assert row(page, "ann").get_by_test_id("user-item-role").inner_text() == "Member"

        # A name taken: said in the form, the list unchanged.
        page.get_by_test_id("user-new").click()
        page.get_by_test_id("user-name").fill("ann")
        page.get_by_test_id("user-save").click()
        name_error.filter(has_text="There is already a user named 'ann'.").wait_for()
        page.get_by_test_id("user-cancel").click()

        # With an invite link: shown with a Copy button and when it expires.
        page.get_by_test_id("user-new").click()
        page.get_by_test_id("user-name").fill("bea")
        page.get_by_test_id("user-save").click()
        link = page.get_by_test_id("invite-link")
        link.wait_for()
        invite = link.input_value()
        assert invite.startswith(f"{cadre.url}/invite#")
        assert "expires on" in page.get_by_test_id("invite-expires").inner_text()
        page.get_by_test_id("invite-copy").click()
        page.get_by_test_id("invite-copy").filter(has_text="Cop").wait_for()  # Copied, or Ctrl+C
        no_blocking_violation(page, '[data-testid="users"]')  # the invite link
        shot(page, "users-invite")
        page.get_by_test_id("invite-done").click()
        assert "Invited" in row(page, "bea").get_by_test_id("user-item-state").inner_text()

        # Bea opens the link in her own browser, chooses a password and lands in the app.
        with browsing(browser, request, invite) as bea:
            expect(bea.get_by_test_id("invite-name")).to_have_value("bea")  # asked for at load
            shot(bea, "invite-page")
            bea.get_by_test_id("invite-password").fill("bea's password")
            bea.get_by_test_id("invite-again").fill("bea's password")
            bea.get_by_test_id("invite-submit").click()
            bea.locator("html[data-routed]").wait_for(state="attached")
            bea.get_by_test_id("chat-list-empty").wait_for()  # nothing of anyone else's
            shot(bea, "member-first")
            assert bea.get_by_test_id("account-name").inner_text() == "bea"
            for admins in ("settings-open", "users-open"):
                assert not bea.get_by_test_id(admins).is_visible(), admins
            llm.script(Reply(answer("Hello Bea, I am ready.")))
            new_chat(bea)
            send(bea, "Hello")
            bea.locator(RESPONSE).filter(has_text="Hello Bea").wait_for()
            assert "I am ready" in last_response(bea).inner_text()

        # Back in the admin's panel: bea is no longer waiting on her invite.
        page.get_by_test_id("users-close").click()
        page.get_by_test_id("users-open").click()
        expect(row(page, "bea").get_by_test_id("user-item-state")).not_to_contain_text("Invited")

        # Disable and enable: the row says so, and the server holds it.
        ann = row(page, "ann")
        ann.get_by_test_id("user-disable").click()
        expect(ann.get_by_test_id("user-item-state")).to_contain_text("Disabled")
        assert page.locator(":focus").get_attribute("data-testid") == "user-disable"
        expect(status).to_contain_text("cannot log in")
        assert ann.get_by_test_id("user-disable").inner_text() == "Enable"
        ann.get_by_test_id("user-disable").click()
        ann.get_by_test_id("user-disable").filter(has_text="Disable").wait_for()

        # A role: ann becomes an admin.
        ann.get_by_test_id("user-role-toggle").click()
        ann.get_by_test_id("user-item-role").filter(has_text="Admin").wait_for()
        assert ann.get_by_test_id("user-role-toggle").inner_text() == "Make member"
        no_blocking_violation(page, '[data-testid="users"]')  # the list, its buttons
        shot(page, "users-list")

        # A new password for ann: too short is said in the dialog; then she logs in with it.
        ann.get_by_test_id("user-reset").click()
        reset = page.get_by_test_id("user-password-dialog")
        reset.get_by_test_id("user-reset-password").fill("short")
        reset.get_by_test_id("user-reset-save").click()
        reset.get_by_test_id("user-reset-error").filter(has_text="at least 8").wait_for()
        reset.get_by_test_id("user-reset-password").fill("ann's new password")
        shot(page, "users-reset")
        reset.get_by_test_id("user-reset-save").click()
        reset.wait_for(state="hidden")
        expect(status).to_contain_text("ann's password is set")
        assert page.locator(":focus").get_attribute("data-testid") == "user-reset"
        assert log_in_status(cadre, "ann", "ann's new password") == 200

        # Delete, asking what becomes of her chats: no choice made is said in the dialog.
        bea_row = row(page, "bea")
        bea_row.get_by_test_id("user-delete").click()
        asked = page.get_by_test_id("user-delete-dialog")
        asked.get_by_test_id("user-delete-confirm").click()
        asked.get_by_test_id("user-delete-error").filter(has_text="Choose what becomes").wait_for()
        asked.get_by_test_id("user-data-hand-over").check()
        assert asked.get_by_test_id("user-heir").input_value() == ADMIN  # oneself first
        no_blocking_violation(page, '[data-testid="user-delete-dialog"]')
        shot(page, "users-delete")
        asked.get_by_test_id("user-delete-confirm").click()
        bea_row.wait_for(state="detached")
        expect(status).to_contain_text("bea was deleted: 1 chat handed over to root.")
        page.get_by_test_id("users-close").click()

        # The settings' login changes its password in Settings: My account says so.
        page.get_by_test_id("account-open").click()
        elsewhere = page.get_by_test_id("account-password-elsewhere")
        expect(elsewhere).to_contain_text("change them in Settings")
        assert page.get_by_test_id("account-password-form").is_hidden()
        # ... and their settings are the server's: My settings leads to Settings.
        servers = page.get_by_test_id("my-settings-server")
        expect(servers).to_contain_text("Your settings are the server's")
        assert page.get_by_test_id("my-settings-form").is_hidden()
        top(page, "my-settings")
        shot(page, "my-settings-server")
        page.get_by_test_id("my-settings-open-settings").click()
        page.get_by_test_id("settings").wait_for()
        assert page.get_by_test_id("account").is_hidden()


def test_a_member_makes_a_key_sees_it_once_and_revokes_it(browser, request, cadre):
    made = requests.post(f"{cadre.url}/api/v1/users", headers={"X-API-Key": ADMIN_KEY},
                         json={"name": "cal", "password": "cal's password"},
                         timeout=30)  # fmt: skip
    assert made.status_code == 201, made.text
    with browsing(browser, request, cadre.url) as page:
        log_in(page, "cal", "cal's password")
        # What only an admin may use is not offered: Settings, Users. Skills are imported
        # into the member's own folder, and the panel says so.
        for admins in ("settings-open", "users-open"):
            assert not page.get_by_test_id(admins).is_visible(), admins
        page.get_by_test_id("skills-open").click()
        page.get_by_test_id("skill-item").first.wait_for()
        imports = page.locator("label:has([data-testid^=skills-import])")
        assert imports.count() == 2 and imports.first.is_visible() and imports.last.is_visible()
        expect(page.get_by_test_id("skills-status")).to_contain_text("Imports are yours alone")
        assert page.get_by_test_id("skill-delete").count() == 0  # the shipped ones are not hers
        page.get_by_test_id("skills-close").click()
        page.get_by_test_id("account-open").click()
        dialog = page.get_by_test_id("account")
        assert page.locator(":focus").get_attribute("data-testid") == "account-close"
        assert "logged in as cal, a member" in dialog.get_by_test_id("account-who").inner_text()
        page.get_by_test_id("keys-empty").wait_for()

        page.get_by_test_id("key-label").fill("laptop script")
        page.get_by_test_id("key-make").click()
        value = page.get_by_test_id("key-value")
        value.wait_for()
        key = value.input_value()
        assert len(key) >= 32 and "will not be shown again" in dialog.inner_text()
        assert api_status(cadre, key) == 200  # the key acts as cal
        item = page.get_by_test_id("key-item")
        assert item.get_by_test_id("key-item-label").inner_text() == "laptop script"
        no_blocking_violation(page, '[data-testid="account"]')
        shot(page, "account-key")
        page.get_by_test_id("key-made-done").click()
        page.get_by_test_id("key-made").wait_for(state="hidden")
        # Shown once: kept nowhere in the page.
        assert value.input_value() == "" and key not in page.content()

        # The password: a wrong current one is said in the form; the right one changes it.
        page.get_by_test_id("account-current").fill("not it")
        page.get_by_test_id("account-new").fill("cal's new password")
        page.get_by_test_id("account-again").fill("cal's new password")
        page.get_by_test_id("account-password-save").click()
        wrong = page.get_by_test_id("account-password-error")
        wrong.filter(has_text="The current password is wrong").wait_for()
        page.get_by_test_id("account-current").fill("cal's password")
        page.get_by_test_id("account-password-save").click()
        page.get_by_test_id("account-password-done").filter(has_text="changed").wait_for()
        assert wrong.is_hidden()

        # Revoked after asking: the list is empty and the key is refused at once.
        item.get_by_test_id("key-revoke").click()
        page.get_by_test_id("confirm-ok").click()
        page.get_by_test_id("keys-empty").wait_for()
        assert api_status(cadre, key) == 401
        shot(page, "account")
        page.get_by_test_id("account-logout").click()
        # The page goes to the login page, and its socket, closed by the logout, may send it
        # there too: the one navigation cut short by the other is no failure (it was, once).
        expect(page).to_have_url(re.compile(r"/login$"))
    assert log_in_status(cadre, "cal", "cal's new password") == 200


@pytest.fixture
def shared_secret(cadre: ServerProcess) -> Iterator[str]:
    """A secret of the server's that members' agents may use (the settings put back after)."""
    shared = {"SHARED_TOKEN": "the-servers-value"}
    with server_settings(cadre, secrets=shared, member_secrets=list(shared)):
        yield "SHARED_TOKEN"


def test_a_member_keeps_secrets_and_mcp_servers_of_their_own(
    browser, request, cadre, mcp, shared_secret
):
    made = requests.post(f"{cadre.url}/api/v1/users", headers={"X-API-Key": ADMIN_KEY},
                         json={"name": "dee", "password": "dee's password"},
                         timeout=30)  # fmt: skip
    assert made.status_code == 201, made.text
    with browsing(browser, request, cadre.url) as page:
        log_in(page, "dee", "dee's password")
        mine = open_my_settings(page)
        # The admin decides the models (member_models is off): one line says so, no field.
        admin_decides = "Your admin decides which models your agents use"
        expect(mine.get_by_test_id("my-models-help")).to_contain_text(admin_decides)
        assert mine.get_by_test_id("my-chat_model").count() == 0
        expect(mine.get_by_test_id("my-server-secrets")).to_contain_text(shared_secret)
        mine.get_by_test_id("my-secrets-empty").wait_for()

        # A name that cannot be one is said at the secret; a right one waits for Save.
        mine.get_by_test_id("my-secret-name").fill("my token")
        mine.get_by_test_id("my-secret-value").fill("dee-token-value-1")
        mine.get_by_test_id("my-secret-add").click()
        expect(mine.get_by_test_id("my-secrets-error")).to_contain_text("cannot be a secret's name")
        assert mine.get_by_test_id("my-secret-name").get_attribute("aria-invalid") == "true"
        mine.get_by_test_id("my-secret-name").fill("DEE_TOKEN")
        mine.get_by_test_id("my-secret-name").press("Enter")  # adds it, does not save yet
        added = secret(mine, "DEE_TOKEN")
        expect(added.get_by_test_id("my-secret-new")).to_have_text("not saved yet")
        expect(mine.get_by_test_id("my-secrets-error")).to_be_hidden()
        expect(mine.get_by_test_id("my-settings-pending")).to_have_text("Not saved yet.")
        mine.get_by_test_id("my-settings-save").click()
        expect(mine.get_by_test_id("my-settings-done")).to_contain_text("Saved.")
        stored = (cadre.usr_dir / "users" / "dee" / "my_settings.json").read_text()
        assert "dee-token-value-1" in stored  # the value itself, kept on the server

        # After a reload: the name with its value masked, nowhere in the page in clear.
        page.reload()
        page.locator("html[data-routed]").wait_for(state="attached")
        mine = open_my_settings(page)
        kept_row = secret(mine, "DEE_TOKEN")
        expect(kept_row.get_by_test_id("my-secret-masked")).to_contain_text("***")
        assert kept_row.get_by_test_id("my-secret-new").count() == 0
        assert "dee-token-value-1" not in page.content()

        # A server that runs a command is the admin's: said under the box, the box marked.
        box = mine.get_by_test_id("my-mcp-servers")
        box.fill('{"mcpServers": {"tools": {"command": "ls"}}}')
        mine.get_by_test_id("my-settings-save").click()
        wrong = mine.get_by_test_id("my-mcp-error")
        expect(wrong).to_contain_text("only the admin can add a server that runs a command")
        assert box.get_attribute("aria-invalid") == "true"
        assert "my-mcp-error" in (box.get_attribute("aria-describedby") or "")
        expect(box).to_be_focused()
        no_blocking_violation(page, '[data-testid="account"]')
        mine.get_by_test_id("my-mcp-field").scroll_into_view_if_needed()
        shot(page, "my-settings-mcp-error")

        # Escape with a change not saved asks first; kept editing, the text is still there.
        page.keyboard.press("Escape")
        page.get_by_test_id("confirm-cancel").click()
        expect(box).to_have_value('{"mcpServers": {"tools": {"command": "ls"}}}')
        top(page, "my-settings")
        shot(page, "my-settings-secrets")

        # Two remote servers: one answers (ready, with its tools), nobody answers at the
        # other (failed, and why); saved with the header masked.
        notes = {"url": mcp.url, "headers": {"Authorization": "Bearer dee-mcp-1"}}
        gone = {"url": "http://127.0.0.1:9/mcp"}
        box.fill(json.dumps({"mcpServers": {"notes": notes, "gone": gone}}))
        mine.get_by_test_id("my-settings-save").click()
        expect(mine.get_by_test_id("my-settings-done")).to_contain_text("MCP servers start now")
        assert box.get_attribute("aria-invalid") is None and wrong.is_hidden()
        assert "dee-mcp-1" not in box.input_value() and '"***"' in box.input_value()
        state = mine.locator(
            "[data-testid=my-mcp-server][data-name=notes] [data-testid=my-mcp-state]"
        )
        expect(state).to_have_text(re.compile(r"Ready — \d+ tools?"), timeout=60_000)
        state = mine.locator(
            "[data-testid=my-mcp-server][data-name=gone] [data-testid=my-mcp-state]"
        )
        expect(state).to_contain_text("Failed: ", timeout=60_000)
        top(page, "my-settings-save")
        shot(page, "my-settings-mcp-status")

        # The admin lets members choose their models: the fields show, the server's model
        # as their placeholder; a key saved comes back as ***.
        page.get_by_test_id("account-close").click()
        with server_settings(cadre, member_models=True):
            mine = open_my_settings(page)
            model = mine.get_by_test_id("my-chat_model")
            assert model.get_attribute("placeholder") == "the server's: openai/chat-model"
            model.fill("openai/dees-model")
            mine.get_by_test_id("my-chat_api_base").fill("not an address")
            mine.get_by_test_id("my-chat_api_key").fill("dee-key-1")
            mine.get_by_test_id("my-settings-save").click()
            said = "Chat model, provider address: a provider's address starts with http"
            expect(mine.get_by_test_id("my-models-error")).to_contain_text(said)
            expect(mine.get_by_test_id("my-chat_api_base")).to_be_focused()
            mine.get_by_test_id("my-chat_api_base").fill("https://models.example.org/v1")
            mine.get_by_test_id("my-settings-save").click()
            expect(mine.get_by_test_id("my-settings-done")).to_contain_text("Saved.")
            expect(mine.get_by_test_id("my-chat_api_key")).to_have_value("***")
            assert "dee-key-1" not in page.content()
            no_blocking_violation(page, '[data-testid="account"]')
            top(page, "my-models")
            shot(page, "my-settings-models")


def open_my_settings(page):
    """My account opened, its My settings shown (the server answered)."""
    page.get_by_test_id("account-open").click()
    mine = page.get_by_test_id("my-settings")
    mine.get_by_test_id("my-settings-form").wait_for()
    return mine


def secret(mine, name: str):
    return mine.locator(f"[data-testid=my-secret][data-name='{name}']")


def top(page, testid: str) -> None:
    """Scroll My account so that `testid` is at its top (for a screenshot)."""
    page.get_by_test_id(testid).evaluate("(el) => el.scrollIntoView({block: 'start'})")


@contextmanager
def server_settings(cadre: ServerProcess, **changes: object) -> Iterator[None]:
    """The server's settings changed as the admin's page would (logged in, its CSRF token),
    and put back as they were after; `secrets` are added to the server's."""
    http = requests.Session()

    def call(method: str, path: str, body: object = None) -> dict[str, object]:
        token = http.get(f"{cadre.url}/api/csrf", timeout=10).json()["token"]
        answer = http.request(method, f"{cadre.url}{path}", json=body, timeout=30,
                              headers={"X-CSRF-Token": token})  # fmt: skip
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    call("POST", "/login", {"login": ADMIN, "password": ADMIN_PASSWORD})
    before = call("GET", "/api/settings")  # secrets masked: sent back so, they keep their values
    if "secrets" in changes:
        changes["secrets"] = {**before["secrets"], **changes["secrets"]}
    call("POST", "/api/settings", changes)
    try:
        yield
    finally:
        call("POST", "/api/settings", {name: before[name] for name in changes})
