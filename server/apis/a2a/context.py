"""Who an A2A request acts as: the owner of its API key, for the SDK's call context.

server/apis/a2a/endpoint.py puts the key's owner in the WSGI environ (a2wsgi hands the
environ on in the ASGI scope); the executor reads it from the call context's state, and
the SDK's task store keeps each owner's tasks apart by the user's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder

from server.apis.a2a.endpoint import USER_KEY

if TYPE_CHECKING:
    from starlette.requests import Request


class KeyOwner(User):
    """The owner of the request's key ("": the desktop mode's one person)."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


class CadreCallContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the key's owner as its user and in its state."""

    def build(self, request: Request) -> ServerCallContext:
        built = super().build(request)
        name = request.scope.get("wsgi_environ", {}).get(USER_KEY)
        if isinstance(name, str):
            built.user = KeyOwner(name)
            built.state["cadre_user"] = name
        # The SDK reads the protocol's version from them; the key stays out of its hands.
        headers = built.state.get("headers")
        if isinstance(headers, dict):
            for name in ("x-api-key", "authorization"):
                headers.pop(name, None)
        return built
