"""Users a provider vouches for (accounts/provided.py), on a real users file: made on first
sight when allowed, their role as the provider says at each login, shut when disabled; an
OpenID Connect user is the provider's subject (issuer and `sub`), never a name: a name
taken is made unique, never a way into another's account, and a user made before
subjects were kept is matched by name once, then by their subject."""

from __future__ import annotations

import json

import pytest

from accounts.provided import Vouched, provided_user
from accounts.users import Users
from helpers.errors import Forbidden, UserError

ISSUER = "https://sso.example.org"


def oidc(name: str, sub: str, admin: bool | None = None, issuer: str = ISSUER) -> Vouched:
    return Vouched(name, "oidc", admin, issuer=issuer, subject=sub)


@pytest.fixture
def users(tmp_path) -> Users:
    found = Users(tmp_path / "users.json")
    found.add("root", "admin", "the admin's password")
    return found


def test_the_first_login_makes_a_member_named_in_lower_case(users):
    given = Vouched("Ada.Lovelace@Example.org", "oidc", None, "ada@example.org", ISSUER, "s-ada")
    made = provided_user(users, given, create=True)
    assert (made.name, made.role, made.source, made.password) == (
        "ada.lovelace@example.org", "member", "oidc", "")  # fmt: skip
    assert made.email == "ada@example.org" and made.space == "users/ada.lovelace@example.org"
    assert (made.issuer, made.subject) == (ISSUER, "s-ada")
    again = provided_user(users, oidc("ada.lovelace@example.org", "s-ada"), create=True)
    assert again == made and len(users.all()) == 2


def test_no_account_is_made_when_the_settings_say_so(users):
    with pytest.raises(Forbidden, match="ask an admin to add you"):
        provided_user(users, Vouched("bea", "header"), create=False)
    assert users.get("bea") is None


def test_a_name_cadre_cannot_use_is_refused_in_words(users):
    with pytest.raises(UserError, match="cannot use") as refused:
        provided_user(users, oidc("Ada Lovelace", "s-1"), create=True)
    assert not isinstance(refused.value, Forbidden)


def test_the_providers_role_is_applied_at_every_login(users):
    assert provided_user(users, oidc("cy", "s-cy", True), create=True).role == "admin"
    assert provided_user(users, oidc("cy", "s-cy", False), create=True).role == "member"
    assert users.get("cy").role == "member"
    # No word on roles: the role Cadre's admins gave stays.
    users.update("cy", role="admin")
    assert provided_user(users, oidc("cy", "s-cy", None), create=True).role == "admin"


def test_the_last_enabled_admin_keeps_the_role_a_provider_takes_away(users, caplog):
    provided_user(users, oidc("fay", "s-fay", True), create=True)
    users.update("root", disabled=True)  # fay is the one enabled admin now
    kept = provided_user(users, oidc("fay", "s-fay", False), create=True)
    assert kept.role == "admin" and users.get("fay").role == "admin"
    assert "keeps the role admin" in caplog.text


def test_a_disabled_account_stays_shut(users):
    provided_user(users, oidc("eve", "s-eve"), create=True)
    users.update("eve", disabled=True)
    with pytest.raises(Forbidden, match="disabled"):
        provided_user(users, oidc("eve", "s-eve", True), create=True)
    assert users.get("eve").role == "member"  # and the refused login changed nothing


def test_openid_connect_never_opens_a_password_account_a_proxy_header_may(users):
    made = provided_user(users, oidc("root", "s-root", True), create=True)
    assert (made.name, made.source) == ("root-2", "oidc")
    assert users.get("root").source == "password"
    assert provided_user(users, Vouched("root", "header"), create=True).name == "root"


def test_a_subject_is_one_account_whatever_its_name_and_a_name_never_another_subject(users):
    ann = provided_user(users, oidc("ann", "s-1"), create=True)
    # Another provider, or another person there, with the same name: an account of their own.
    other = provided_user(users, oidc("ann", "s-1", issuer="https://other.example.org"),
                          create=True)  # fmt: skip
    third = provided_user(users, oidc("Ann", "s-2"), create=True)
    assert (ann.name, other.name, third.name) == ("ann", "ann-2", "ann-3")
    # Ann's email (the name claim) changes at the provider: still her account.
    assert provided_user(users, oidc("ann.new@example.org", "s-1"), create=True) == ann
    assert users.get("ann.new@example.org") is None
    # Without making accounts, an unknown subject is refused even under a known name.
    with pytest.raises(Forbidden, match="ask an admin"):
        provided_user(users, oidc("ann", "s-9"), create=False)


def test_a_user_made_before_subjects_were_kept_is_matched_by_name_once(users, tmp_path):
    # A users file written before: an OpenID Connect user with no subject on record.
    data = json.loads((tmp_path / "users.json").read_text())
    data["users"].append({"name": "bo", "role": "member", "password": "", "created": 2.0,
                          "source": "oidc", "space": "users/bo"})  # fmt: skip
    (tmp_path / "users.json").write_text(json.dumps(data))
    bo = provided_user(users, oidc("bo", "s-bo"), create=True)
    assert (bo.name, bo.issuer, bo.subject) == ("bo", ISSUER, "s-bo")
    # From now on the subject is the key: another "bo" is another person.
    assert provided_user(users, oidc("bo", "s-other"), create=True).name == "bo-2"
    assert provided_user(users, oidc("Bo", "s-bo"), create=True).name == "bo"
