"""What Cadre reads of an OpenID Connect provider's claims (server/security/oidc_client.py):
the user's name, whether they are an admin, and the provider's configuration."""

from __future__ import annotations

import pytest

from helpers.settings import Settings
from server.security.oidc_client import OidcConfig, SignInFailed, is_admin, user_name


def test_the_configured_claim_names_the_user_else_their_email():
    claims = {"preferred_username": " Ada ", "email": "ada@example.org"}
    assert user_name(claims, "preferred_username") == "Ada"
    assert user_name({**claims, "preferred_username": ""}, "preferred_username") == (
        "ada@example.org")  # fmt: skip
    assert user_name(claims, "nickname") == "ada@example.org"
    with pytest.raises(SignInFailed, match="neither 'nickname' nor 'email'") as failed:
        user_name({"sub": "x", "email": 7}, "nickname")
    assert failed.value.status == 401


@pytest.mark.parametrize(
    ("held", "admin"),
    [(["staff", "cadre-admins"], True), (["staff"], False), ("cadre-admins", True),
     ("cadre-admins-not", False), (None, False), ([], False)],
)  # fmt: skip
def test_the_admin_claim_holds_the_value_as_a_list_or_alone(held, admin):
    claims = {"groups": held} if held is not None else {}
    assert is_admin(claims, "groups", "cadre-admins") is admin


def test_no_admin_value_leaves_roles_to_cadre():
    assert is_admin({"groups": ["cadre-admins"]}, "groups", "") is None


def test_a_provider_is_set_by_its_issuer_and_client_and_always_asks_for_openid():
    assert OidcConfig.of(Settings()) is None
    assert OidcConfig.of(Settings(oidc_issuer="https://id.example.org")) is None
    config = OidcConfig.of(
        Settings(
            oidc_issuer="https://id.example.org/realms/a/",
            oidc_client_id="cadre",
            oidc_scopes="profile email",
        )
    )
    assert config is not None and config.scopes == "openid profile email"
    assert config.discovery == (
        "https://id.example.org/realms/a/.well-known/openid-configuration")  # fmt: skip
