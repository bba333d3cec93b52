"""The settings of who reaches Cadre: the external API's key, the first admin's login,
host names and proxies, what members' agents may use, secrets and single sign-on: the
second part of the `Settings` schema (helpers/settings_about.py says how the parts chain)."""

from __future__ import annotations

from pydantic import Field

from helpers.settings_about import about
from helpers.settings_models import ModelFields


class AccessFields(ModelFields):
    """The settings' fields up to who reaches Cadre."""

    #: Key of the external HTTP API; empty disables it.
    api_key: str = Field(
        "", **about("External API key", "The X-API-Key of /api/v1; empty: the API is off.",
                    "Server and security", secret=True, kind="apikey"),
    )  # fmt: skip
    #: The first admin's login (accounts/first_admin.py); empty: no accounts, the desktop mode.
    auth_login: str = Field(
        "", **about("Login", "Needed to serve on an address other than 127.0.0.1; "
                    "empty: no login asked.", "Server and security"),
    )  # fmt: skip
    auth_password: str = Field(
        "", **about("Password", "The login's password (stored hashed).", "Server and security",
                    secret=True),
    )  # fmt: skip
    #: Host names (besides loopback names and the address Cadre serves on) that the
    #: browser may use to reach Cadre: a name of this machine, or a reverse proxy's.
    allowed_hosts: list[str] = Field(
        default_factory=list,
        **about("Allowed host names", "Other names the browser may reach Cadre by, "
                "one per line (name or name:port).", "Server and security"),
    )  # fmt: skip
    #: Addresses of reverse proxies whose `X-Forwarded-For` header names the client.
    trusted_proxies: list[str] = Field(
        default_factory=list,
        **about("Trusted proxies", "Reverse proxies' addresses or networks, one per line.",
                "Server and security"),
    )  # fmt: skip
    #: The tools members' agents may use (accounts/: admins' agents may use every tool).
    member_tools: list[str] = Field(
        default_factory=list,
        **about("Tools members may use", "Tool names, one per line (server.* for an MCP "
                "server's); empty: all. Admins use every tool.", "Server and security"),
    )  # fmt: skip
    #: May members set their own models and provider keys (accounts/personal.py)?
    member_models: bool = Field(
        False, **about("Members choose their models", "Members may set their own models and "
                       "provider keys in My settings; off: everyone uses the models above.",
                       "Server and security"),
    )  # fmt: skip
    #: The secrets below that members' agents may use too (each person has their own).
    member_secrets: list[str] = Field(
        default_factory=list,
        **about("Secrets members may use", "Names of the secrets below, one per line, that "
                "members' agents may use too; empty: none (each person sets their own).",
                "Server and security"),
    )  # fmt: skip
    #: Secrets tools may use as §§secret(NAME); their values are never shown or stored.
    secrets: dict[str, str] = Field(
        default_factory=dict,
        **about("Secrets", "NAME=value, one per line; agents write §§secret(NAME) and never "
                "see the value.", "Server and security", kind="secrets"),
    )  # fmt: skip

    # -- single sign-on (issue 35): an OpenID Connect provider, or a reverse proxy's login --
    #: The provider's issuer URL; its /.well-known/openid-configuration says the rest.
    oidc_issuer: str = Field(
        "", **about("Provider (issuer URL)", "The OpenID Connect provider's address, e.g. "
                    "https://sso.example.org/realms/main; empty: no single sign-on.",
                    "Single sign-on"),
    )  # fmt: skip
    oidc_provider_name: str = Field(
        "", **about("Provider's name", 'On the login page\'s button: "Log in with <name>"; '
                    'empty: "single sign-on".', "Single sign-on"),
    )  # fmt: skip
    oidc_client_id: str = Field(
        "", **about("Client ID", "The ID the provider gave Cadre.", "Single sign-on")
    )
    oidc_client_secret: str = Field(
        "", **about("Client secret", "The secret the provider gave Cadre.", "Single sign-on",
                    secret=True),
    )  # fmt: skip
    oidc_scopes: str = Field(
        "openid profile email",
        **about("Scopes", "What Cadre asks the provider for, separated by spaces (openid "
                "always).", "Single sign-on"),
    )  # fmt: skip
    #: The ID token's claim that names the user; `email` when the token lacks it.
    oidc_user_claim: str = Field(
        "preferred_username",
        **about("Claim with the user's name", "The ID token's claim that is the user's name "
                "in Cadre; without it, their email.", "Single sign-on"),
    )  # fmt: skip
    #: Whoever's `oidc_admin_claim` holds `oidc_admin_value` is an admin, anyone else a
    #: member, set again at every login; an empty value leaves roles to Cadre's admins.
    oidc_admin_claim: str = Field(
        "groups", **about("Claim that makes an admin", "The ID token's claim looked at for "
                          "the value below (a list, or one value).", "Single sign-on"),
    )  # fmt: skip
    oidc_admin_value: str = Field(
        "", **about("Value that makes an admin", "Who has it in that claim (e.g. "
                    "cadre-admins) is an admin, others members, set at each login; empty: "
                    "roles are Cadre's.", "Single sign-on"),
    )  # fmt: skip
    #: Someone the provider or the proxy vouches for gets an account on first sight.
    sso_create_users: bool = Field(
        True, **about("Make an account on first login", "Someone the provider or the proxy "
                      "vouches for becomes a member; off: only accounts an admin made.",
                      "Single sign-on"),
    )  # fmt: skip
    #: A reverse proxy that logs people in (oauth2-proxy, Authelia) names them in a header,
    #: believed only from `trusted_proxies` (server/security/trusted_header.py).
    sso_header_login: bool = Field(
        False, **about("Believe the proxy's login header", "Behind a proxy that logs people "
                       "in (oauth2-proxy, Authelia): its header names the user, from trusted "
                       "proxies only.", "Single sign-on"),
    )  # fmt: skip
    sso_user_header: str = Field(
        "Remote-User", **about("Header with the user's name", "Set by the proxy; the next one "
                               "when it is missing.", "Single sign-on"),
    )  # fmt: skip
    sso_email_header: str = Field(
        "Remote-Email", **about("Header with the user's email", "Used as the name when the "
                                "one above is missing.", "Single sign-on"),
    )  # fmt: skip
