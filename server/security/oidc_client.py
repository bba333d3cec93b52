"""OpenID Connect, Cadre's side (the relying party), through authlib.

authlib reads the provider's discovery document (`<issuer>/.well-known/openid-configuration`),
builds the authorization address (with a nonce, and PKCE: S256), exchanges the code, and
checks the ID token: its signature against the provider's keys (JWKS, fetched again when
an unknown key id turns up), issuer, audience, expiry and nonce. Cadre checks what authlib
leaves to its caller: that the state that came back is the one sent (server/security/oidc.py
keeps it in a cookie of its own), and that the discovery document is the issuer's own.
When the ID token lacks a claim the settings name, the provider's userinfo endpoint is
asked (some providers, Authelia among them, keep claims there), its answer taken only for
the same subject.

The clients are kept per configuration (`OidcClients`), so the discovery document and
the keys are fetched once an hour, not at every login.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from authlib.integrations.base_client import (
    BaseApp,
    FrameworkIntegration,
    OAuth2Mixin,
    OAuthError,
    OpenIDMixin,
)
from authlib.integrations.requests_client import OAuth2Session
from joserfc.errors import JoseError

from helpers.errors import UserError
from helpers.settings import Settings

log = logging.getLogger(__name__)

#: Seconds one call to the provider may take.
TIMEOUT = 15.0
#: A client (with the discovery document and keys it fetched) is made anew after this.
CLIENT_SECONDS = 3600.0
#: The claim that names the user when the configured one is missing.
FALLBACK_CLAIM = "email"


class SignInFailed(UserError):
    """A sign-in through the provider that did not work: `str()` tells the person what
    happened and what to do; `status` is the HTTP answer's; `detail` goes to the log."""

    def __init__(self, message: str, status: int, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail or message


@dataclass(frozen=True)
class OidcConfig:
    """What Cadre needs of the settings to talk to the provider."""

    issuer: str
    client_id: str
    client_secret: str
    scopes: str

    @classmethod
    def of(cls, settings: Settings) -> OidcConfig | None:
        """The settings' provider; None when no issuer or client id is set."""
        if not (settings.oidc_issuer and settings.oidc_client_id):
            return None
        scopes = settings.oidc_scopes.split()
        scopes = scopes if "openid" in scopes else ["openid", *scopes]
        return cls(settings.oidc_issuer, settings.oidc_client_id, settings.oidc_client_secret,
                   " ".join(scopes))  # fmt: skip

    @property
    def discovery(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"


@dataclass(frozen=True)
class Pending:
    """A sign-in on its way through the provider: what the answer must match."""

    state: str
    nonce: str
    verifier: str
    redirect_uri: str


class _Client(OAuth2Mixin, OpenIDMixin, BaseApp):  # type: ignore[misc]
    """authlib's client, without a web framework's session (Cadre keeps the state)."""

    client_cls = OAuth2Session


def _client(config: OidcConfig) -> _Client:
    host = urlsplit(config.issuer).hostname or ""
    if config.issuer.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
        log.warning(
            "single sign-on: the provider %s is reached over plain http: codes and "
            "the client secret cross the network readable; use https",
            config.issuer,
        )
    return _Client(
        FrameworkIntegration("oidc"), name="oidc", client_id=config.client_id,
        client_secret=config.client_secret or None, server_metadata_url=config.discovery,
        client_kwargs={"scope": config.scopes, "code_challenge_method": "S256",
                       "default_timeout": TIMEOUT},
    )  # fmt: skip


class OidcClients:
    """The client of the configuration in force, made again when it changes or grows old."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[OidcConfig, float, _Client] | None = None

    def client(self, config: OidcConfig) -> _Client:
        with self._lock:
            kept = self._kept
            if kept is None or kept[0] != config or time.monotonic() - kept[1] > CLIENT_SECONDS:
                kept = self._kept = (config, time.monotonic(), _client(config))
            return kept[2]

    def forget(self) -> None:
        """Fetch the discovery document again next time (the provider may have been down)."""
        with self._lock:
            self._kept = None


def begin(client: _Client, config: OidcConfig, redirect_uri: str,
          again_within: int | None = None) -> tuple[str, Pending]:  # fmt: skip
    """The provider's address to send the browser to, and what its answer must match.
    `again_within`: the person must prove who they are again (`prompt=login`), at least
    if their last time was longer ago than that many seconds (`max_age`: the ID token
    then says when in `auth_time`, OpenID Connect Core 3.1.2.1)."""
    again = {"prompt": "login", "max_age": again_within} if again_within is not None else {}
    with _provider_errors(config):
        _check_issuer(client, config)
        made = client.create_authorization_url(redirect_uri, **again)
    return made["url"], Pending(made["state"], made["nonce"], made["code_verifier"], redirect_uri)


def finish(client: _Client, config: OidcConfig, pending: Pending, answer: dict[str, str],
           wanted: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    """The ID token's claims (with the userinfo's for `wanted` ones it lacks), once the code
    in `answer` (the callback's query) is exchanged and the token checked."""
    if answer.get("error"):
        said = f"{answer['error']}: {answer.get('error_description', '')}"[:300]
        raise SignInFailed(f"the sign-in provider did not sign you in ({said}): try again, or "
                           "ask an admin", 401)  # fmt: skip
    if not answer.get("code"):
        raise SignInFailed("the provider's answer has no code: start the sign-in again", 400)
    with _provider_errors(config):
        _check_issuer(client, config)  # a client made anew since the sign-in began reads it again
        token = client.fetch_access_token(
            redirect_uri=pending.redirect_uri, code=answer["code"], code_verifier=pending.verifier
        )
        claims = dict(client.parse_id_token(token, nonce=pending.nonce) or {})
        if not claims:
            raise SignInFailed("the provider sent no ID token: ask an admin to check that the "
                               "scopes include openid", 502)  # fmt: skip
        if any(name not in claims for name in wanted) and _userinfo_endpoint(client):
            info = dict(client.userinfo(token=token))
            if info.get("sub") != claims.get("sub"):
                raise SignInFailed(
                    "the provider's user information is of someone else: ask an admin",
                    401,
                    f"userinfo sub {info.get('sub')!r}",
                )
            claims = {**info, **claims}
    return claims


def authenticated_at(claims: dict[str, Any]) -> float | None:
    """When the provider last made the person prove who they are (`auth_time`), if it says."""
    said = claims.get("auth_time")
    return float(said) if isinstance(said, int | float) and not isinstance(said, bool) else None


def user_name(claims: dict[str, Any], claim: str) -> str:
    """The name the claims give the user: the configured claim, else their email."""
    for name in (claim, FALLBACK_CLAIM):
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    raise SignInFailed(f"the provider's answer names you by neither {claim!r} nor "
                       f"{FALLBACK_CLAIM!r}: ask an admin to set the claim with the user's "
                       "name", 401)  # fmt: skip


def is_admin(claims: dict[str, Any], claim: str, value: str) -> bool | None:
    """Does the `claim` hold `value` (a list holding it, or the value itself)? None when no
    value is set: roles are then Cadre's own business."""
    if not (claim and value):
        return None
    held = claims.get(claim)
    if isinstance(held, list | tuple):
        return value in (str(item) for item in held)
    return held is not None and str(held) == value


def _userinfo_endpoint(client: _Client) -> str:
    return str(client.load_server_metadata().get("userinfo_endpoint") or "")


def _check_issuer(client: _Client, config: OidcConfig) -> None:
    """The discovery document must be the issuer's own (OpenID Connect Discovery, 4.3): the
    ID token's issuer is checked against the one it names."""
    said = str(client.load_server_metadata().get("issuer", ""))
    if said.rstrip("/") != config.issuer:
        raise SignInFailed(f"the provider at {config.issuer} calls itself {said[:200]!r}: ask "
                           "an admin to set that as the issuer", 502)  # fmt: skip


@contextlib.contextmanager
def _provider_errors(config: OidcConfig) -> Iterator[None]:
    """What authlib, requests and joserfc raise, told in words (and logged in full)."""
    where = config.issuer
    try:
        yield
    except OAuthError as exc:  # the provider's error answer (invalid_grant, invalid_client)
        raise SignInFailed(
            f"the sign-in provider refused Cadre's request ({exc.error}): "
            "start the sign-in again; if it keeps failing, ask an admin to "
            "check the client ID and secret",
            401,
            str(exc),
        ) from exc
    except JoseError as exc:  # the ID token: signature, issuer, audience, expiry, nonce
        raise SignInFailed("the provider's ID token did not pass Cadre's checks: start the "
                           "sign-in again; if it keeps failing, ask an admin", 401,
                           f"{type(exc).__name__}: {exc}") from exc  # fmt: skip
    except (requests.RequestException, ValueError, RuntimeError, KeyError) as exc:
        # Down, slow, or answering what is no OpenID provider's (no JSON, no jwks_uri).
        raise SignInFailed(f"could not reach the sign-in provider at {where}: try again "
                           "later, or ask an admin to check the single sign-on settings",
                           502, f"{type(exc).__name__}: {exc}") from exc  # fmt: skip
