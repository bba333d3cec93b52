"""An OpenID Connect provider for tests, made of authlib's own server classes: a small Flask
app on a free loopback port, served in a thread, issuing real RS256-signed ID tokens whose
key it publishes as a JWKS. No network beyond loopback.

It signs in without asking: the authorization endpoint approves at once for the person
the test put in `provider.person` (and redirects back with a code). Who has a session at
the provider is signed in on it; the provider "asks again" (the person proves who they
are now) on their first visit, and when the request says `prompt=login` or its `max_age`
is past: the ID token's `auth_time` says when (`provider.asked_again` counts those). Discovery
(`/.well-known/openid-configuration`), the token endpoint (client_secret_basic, PKCE S256
required, the nonce put in the ID token) and a userinfo endpoint (bearer token). The ID
token carries `preferred_username` and `email`; `groups` is given by the userinfo
endpoint alone, as some providers (Authelia) keep claims there.

The issuer is `http://localhost:<port>`: another site than Cadre's 127.0.0.1, as a real
provider is, so a browser treats the redirect back as a navigation from another site.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, ClientMixin, TokenMixin, grants
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import OpenIDCode, UserInfo, UserInfoEndpoint
from flask import Flask, jsonify, request
from joserfc.jwk import KeySet, RSAKey
from werkzeug.serving import WSGIRequestHandler, make_server

CLIENT_ID, CLIENT_SECRET = "cadre", "cadre's client secret"
KEY_ID = "test-key-1"


@dataclass
class Person:
    """Who the provider signs in next."""

    sub: str
    preferred_username: str
    email: str = ""
    groups: list[str] = field(default_factory=list)
    #: When they last proved who they are at the provider (their session there; the ID
    #: token's `auth_time`): None until the provider first asks them.
    authenticated_at: float | None = None


@dataclass
class _Client(ClientMixin):
    client_id: str
    client_secret: str

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return ""

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in scope.split() if s in ("openid", "profile", "email", "groups"))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri.endswith("/login/oidc/callback")

    def check_client_secret(self, client_secret: str) -> bool:
        return client_secret == self.client_secret

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "client_secret_basic" if endpoint == "token" else True

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "authorization_code"

    @property
    def client_metadata(self) -> dict[str, Any]:
        return {}


@dataclass
class _Code(AuthorizationCodeMixin):
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    person: Person
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: int = field(default_factory=lambda: int(time.time()))

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> str:
        return ""

    def get_amr(self) -> list[str]:
        return []


@dataclass
class _Token(TokenMixin):
    access_token: str
    scope: str
    person: Person
    client: _Client
    issued: float = field(default_factory=time.time)

    def check_client(self, client: ClientMixin) -> bool:
        return client.get_client_id() == self.client.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return 3600

    def is_expired(self) -> bool:
        return time.time() > self.issued + 3600

    def is_revoked(self) -> bool:
        return False

    def get_user(self) -> Person:
        return self.person

    def get_client(self) -> _Client:
        return self.client


class _Quiet(WSGIRequestHandler):
    """No line per request on the test's output (`provider.asked` keeps them)."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class OidcProvider:
    """The provider, served from `start()` to `stop()`; `issuer` is its address."""

    def __init__(self) -> None:
        self.key = _signing_key()
        self.client = _Client(CLIENT_ID, CLIENT_SECRET)
        self.person = Person("sub-0", "nobody")
        self.codes: dict[str, _Code] = {}
        self.tokens: dict[str, _Token] = {}
        #: Show a page with an Approve button first (as a real provider's login page),
        #: instead of approving at once.
        self.asks = False
        #: The ID token's audience when not Cadre's client (a token meant for another).
        self.audience: str | None = None
        #: What the provider's endpoints were asked for, in order (the tests look).
        self.asked: list[str] = []
        #: The query of each authorization request, and the times a person was asked again.
        self.authorize_queries: list[dict[str, str]] = []
        self.asked_again = 0
        self._server = make_server("127.0.0.1", 0, self._app(), threaded=True,
                                   request_handler=_Quiet)  # fmt: skip
        self.issuer = f"http://localhost:{self._server.server_port}"
        # A short poll: `stop` waits for it (half a second by default, at every module's end).
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)  # fmt: skip

    def start(self) -> OidcProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(10)

    # -- the app -------------------------------------------------------------------

    def _app(self) -> Flask:
        app = Flask("oidc-provider")
        server = AuthorizationServer(app, query_client=self._query_client,
                                     save_token=self._save_token)  # fmt: skip
        server.register_grant(_code_grant(self),
                              [CodeChallenge(required=True), _id_token(self)])  # fmt: skip
        protector = ResourceProtector()
        protector.register_token_validator(_bearer(self)())
        server.register_endpoint(_userinfo(self)(resource_protector=protector))

        @app.before_request
        def note() -> None:
            self.asked.append(request.path)

        @app.get("/.well-known/openid-configuration")
        def discovery() -> Any:
            return jsonify({
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "userinfo_endpoint": f"{self.issuer}/userinfo",
                "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"],
            })  # fmt: skip

        @app.get("/jwks")
        def jwks() -> Any:
            return jsonify(KeySet([self.key]).as_dict(private=False))

        @app.route("/authorize", methods=["GET", "POST"])
        def authorize() -> Any:
            grant = server.get_consent_grant(end_user=self.person)
            if self.asks and request.method == "GET":
                # The provider's own page: what comes next starts from another site.
                return (
                    f'<form method="post" action="/authorize?{request.query_string.decode()}">'
                    '<button id="approve">Approve</button></form>'
                )
            self.authorize_queries.append(request.args.to_dict())
            self._authenticate(request.args.get("prompt", ""), request.args.get("max_age"))
            return server.create_authorization_response(grant_user=self.person, grant=grant)

        @app.post("/token")
        def token() -> Any:
            return server.create_token_response()

        @app.get("/userinfo")
        def userinfo() -> Any:
            return server.create_endpoint_response("userinfo")

        return app

    def _authenticate(self, prompt: str, max_age: str | None) -> None:
        """The person proves who they are now, when they have no session here, or the
        request says to (`prompt=login`) or finds their last time too long ago."""
        person, now = self.person, time.time()
        last = person.authenticated_at
        if (
            last is None
            or "login" in prompt.split()
            or (max_age is not None and now - last > int(max_age))
        ):
            person.authenticated_at = now
            self.asked_again += last is not None

    def _query_client(self, client_id: str) -> _Client | None:
        return self.client if client_id == self.client.client_id else None

    def _save_token(self, token: dict[str, Any], request: Any) -> None:
        self.tokens[token["access_token"]] = _Token(token["access_token"], token["scope"],
                                                    request.user, request.client)  # fmt: skip


@functools.cache
def _signing_key() -> RSAKey:
    """The providers' key, one for the test process: a 2048-bit key costs a tenth of a
    second or more to make, and nothing needs two providers' keys to differ (each has
    its own issuer, which is what Cadre keeps keys by)."""
    return RSAKey.generate_key(2048, parameters={"kid": KEY_ID, "use": "sig"})


def _code_grant(provider: OidcProvider) -> type[grants.AuthorizationCodeGrant]:
    class CodeGrant(grants.AuthorizationCodeGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

        def save_authorization_code(self, code: str, request: Any) -> None:
            data = request.payload.data
            provider.codes[code] = _Code(
                code, request.payload.client_id, request.payload.redirect_uri,
                request.payload.scope, request.user, data.get("nonce"),
                data.get("code_challenge"), data.get("code_challenge_method"),
                int(request.user.authenticated_at or time.time()),
            )  # fmt: skip

        def query_authorization_code(self, code: str, client: _Client) -> _Code | None:
            found = provider.codes.get(code)
            return found if found and found.client_id == client.client_id else None

        def delete_authorization_code(self, authorization_code: _Code) -> None:
            provider.codes.pop(authorization_code.code, None)

        def authenticate_user(self, authorization_code: _Code) -> Person:
            return authorization_code.person

    return CodeGrant


def _id_token(provider: OidcProvider) -> OpenIDCode:
    class IdToken(OpenIDCode):
        def exists_nonce(self, nonce: str, request: Any) -> bool:
            return any(code.nonce == nonce for code in provider.codes.values())

        def resolve_client_private_key(self, client: _Client) -> RSAKey:
            return provider.key

        def get_client_algorithm(self, client: _Client) -> str:
            return "RS256"

        def get_encode_header(self, client: _Client) -> dict[str, str]:
            return {"alg": "RS256", "kid": KEY_ID}

        def get_client_claims(self, client: _Client) -> dict[str, Any]:
            return {"iss": provider.issuer, "aud": [provider.audience or client.client_id]}

        def generate_user_info(self, user: Person, scope: str) -> UserInfo:
            return UserInfo(sub=user.sub, preferred_username=user.preferred_username,
                            email=user.email)  # fmt: skip

    return IdToken(require_nonce=True)


def _bearer(provider: OidcProvider) -> type[BearerTokenValidator]:
    class Bearer(BearerTokenValidator):
        def authenticate_token(self, token_string: str) -> _Token | None:
            return provider.tokens.get(token_string)

    return Bearer


def _userinfo(provider: OidcProvider) -> type[UserInfoEndpoint]:
    class Userinfo(UserInfoEndpoint):
        def get_issuer(self) -> str:
            return provider.issuer

        def generate_user_info(self, user: Person, scope: str) -> UserInfo:
            return UserInfo(sub=user.sub, preferred_username=user.preferred_username,
                            email=user.email, groups=user.groups)  # fmt: skip

    return Userinfo
