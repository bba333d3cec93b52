"""Users a provider vouches for (accounts/provided.py), on a real users file: made on first
sight when allowed, their role as the provider says at each login, shut when disabled,
and a provider's word never opens an account made with a password."""

from __future__ import annotations

import pytest

from accounts.provided import Vouched, provided_user
from accounts.users import Users
from helpers.errors import Forbidden, UserError


@pytest.fixture
def users(tmp_path) -> Users:
    found = Users(tmp_path / "users.json")
    found.add("root", "admin", "the admin's password")
    return found


def test_the_first_login_makes_a_member_named_in_lower_case(users):
    made = provided_user(users, Vouched("Ada.Lovelace@Example.org", "oidc", None,
                                        "ada@example.org"), create=True)  # fmt: skip
    assert (made.name, made.role, made.source, made.password) == (
        "ada.lovelace@example.org", "member", "oidc", "")  # fmt: skip
    assert made.email == "ada@example.org" and made.space == "users/ada.lovelace@example.org"
    again = provided_user(users, Vouched("ada.lovelace@example.org", "oidc"), create=True)
    assert again == made and len(users.all()) == 2


def test_no_account_is_made_when_the_settings_say_so(users):
    with pytest.raises(Forbidden, match="ask an admin to add you"):
        provided_user(users, Vouched("bea", "header"), create=False)
    assert users.get("bea") is None


def test_a_name_cadre_cannot_use_is_refused_in_words(users):
    with pytest.raises(UserError, match="cannot use") as refused:
        provided_user(users, Vouched("Ada Lovelace", "oidc"), create=True)
    assert not isinstance(refused.value, Forbidden)


def test_the_providers_role_is_applied_at_every_login(users):
    assert provided_user(users, Vouched("cy", "oidc", True), create=True).role == "admin"
    assert provided_user(users, Vouched("cy", "oidc", False), create=True).role == "member"
    assert users.get("cy").role == "member"
    # No word on roles: the role Cadre's admins gave stays.
    users.update("cy", role="admin")
    assert provided_user(users, Vouched("cy", "oidc", None), create=True).role == "admin"


def test_the_last_enabled_admin_keeps_the_role_a_provider_takes_away(users, caplog):
    provided_user(users, Vouched("fay", "oidc", True), create=True)
    users.update("root", disabled=True)  # fay is the one enabled admin now
    kept = provided_user(users, Vouched("fay", "oidc", False), create=True)
    assert kept.role == "admin" and users.get("fay").role == "admin"
    assert "keeps the role admin" in caplog.text


def test_a_disabled_account_stays_shut(users):
    provided_user(users, Vouched("eve", "oidc"), create=True)
    users.update("eve", disabled=True)
    with pytest.raises(Forbidden, match="disabled"):
        provided_user(users, Vouched("eve", "oidc", True), create=True)
    assert users.get("eve").role == "member"  # and the refused login changed nothing


def test_openid_connect_never_opens_a_password_account_a_proxy_header_may(users):
    with pytest.raises(Forbidden, match="logs in with a password"):
        provided_user(users, Vouched("root", "oidc", True), create=True)
    assert provided_user(users, Vouched("root", "header"), create=True).name == "root"
