"""The accounts, as an admin manages them and as each person manages their own keys.

The same routes serve the page (`/api/users`, `/api/keys`: login and CSRF) and the
external API (`/api/v1/users`, `/api/v1/keys`: an API key, acting as its owner):

    GET    users                   every account (admin)
    POST   users                   {"name", "password" | "invite": true, "role"} → 201 (admin)
    PATCH  users/<name>            {"disabled"} / {"role"} / {"password"} / {"limits": {
                                   "max_runs", "tokens_per_day", "cost_per_day", "upload_mb"}}
                                   (admin: 0 no limit, null the members' default);
                                   {"password", "current_password"} (that user)
    DELETE users/<name>            {"data": "delete"} or {"data": "hand_over", "to"} (admin)
    GET    users/<name>/keys       their keys, never the keys themselves (admin, or that user)
    POST   users/<name>/keys       {"label"} → 201 {"id", "key"} (admin, or that user)
    DELETE keys/<id>               revoke (admin, or the key's owner)

and for the page alone, `GET /api/me`: who is asking ({"accounts": false} in the desktop
mode), so that it offers a member nothing only an admin may do.

The settings' login is the first admin (accounts/first_admin.py): its password is the
settings' and changes only there (`first_admin` in the list and in /api/me says which).

A name or key id that is not the asker's to see is a 404, as one that does not exist.
Every change is a line in the audit log; disabling, deleting or resetting someone's
password ends their sessions (their pages are disconnected) and their keys stop at once.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from flask import Blueprint, Response, current_app, jsonify, request, session
from pydantic import ConfigDict, Field

from accounts.limits import view
from accounts.passwords import verify_password
from accounts.users import ROLES, User, check_password
from helpers.errors import Forbidden, NotFound, UserError
from helpers.settings import load_settings
from server.routes.payloads import Payload
from server.routes.routing import body, chats
from server.run_limits import current
from server.security import audit, identity
from server.security.guard import credentials, sessions
from store.handing_over import hand_over

log = logging.getLogger(__name__)

#: Where an accepted invite's link sends its holder.
INVITE_PAGE = "/invite"


class NewUser(Payload):
    name: str = Field(min_length=1, max_length=64)
    role: Literal["admin", "member"] = "member"
    password: str = Field(default="", max_length=1024)
    #: No password: a one-time link that lets the person choose theirs.
    invite: bool = False


class LimitsChange(Payload):
    """Limits an admin sets on an account (accounts/limits.py): a number (0: no limit), or
    null for the server's default for members; a field left out stays as it is."""

    model_config = ConfigDict(extra="forbid")  # a misspelt limit is an error, not ignored
    max_runs: int | None = Field(default=None, ge=0, le=1000)
    tokens_per_day: int | None = Field(default=None, ge=0)
    cost_per_day: float | None = Field(default=None, ge=0)
    upload_mb: int | None = Field(default=None, ge=0, le=100_000)


class UserChange(Payload):
    limits: LimitsChange | None = None
    disabled: bool | None = None
    role: Literal["admin", "member"] | None = None
    password: str | None = Field(default=None, max_length=1024)
    #: A person changing their own password proves it is them.
    current_password: str | None = Field(default=None, max_length=1024)


class Leaving(Payload):
    #: What becomes of the account's chats and files.
    data: Literal["delete", "hand_over"] | None = None
    #: Who gets them ("hand_over").
    to: str = Field(default="", max_length=64)


class NewKey(Payload):
    label: str = Field(default="", max_length=100)


def _admin_only() -> None:
    if not identity.is_admin():
        raise Forbidden("only an admin may manage accounts")


def _account(name: str) -> User:
    """The account `name` when the asker may see it (an admin: any; a member: their own);
    NotFound otherwise, the same as for no such account."""
    found = identity.accounts().users.get(name)
    viewer = identity.viewer()
    if found is None or not (identity.is_admin() or found.name == viewer):
        raise NotFound(f"there is no user named {name!r}")
    return found


def _first_name() -> str | None:
    """The settings' login: the first admin's name, while the settings name a login (None:
    no login there; the first admin's password is then their own, kept only here)."""
    first = identity.accounts().users.first_admin()
    return first.name if first and load_settings().auth_login.strip() else None


def _is_first(user: User) -> bool:
    return user.name == _first_name()


def _view(user: User, invited: set[str], first: str | None) -> dict[str, Any]:
    return {**user.public(), "invited": user.name in invited, "first_admin": user.name == first,
            "limits_in_force": view(current().limits_of(user.name))}  # fmt: skip


def me() -> Response:
    """Who the page is for: their name and role, or that there are no accounts."""
    user = identity.user()
    if user is None:  # the guard let it through: the desktop mode
        return jsonify({"accounts": False})
    return jsonify({"accounts": True, "name": user.name, "role": user.role,
                    "is_admin": user.is_admin, "first_admin": _is_first(user),
                    "source": user.source})  # fmt: skip


def listing() -> Response:
    _admin_only()
    accounts = identity.accounts()
    invited = accounts.invites.pending()
    first = _first_name()
    return jsonify({"users": [_view(u, invited, first) for u in accounts.users.all()],
                    "roles": list(ROLES)})  # fmt: skip


def create() -> tuple[Response, int]:
    _admin_only()
    data = body(NewUser, 'send {"name", "role", and "password" or "invite": true}')
    accounts = identity.accounts()
    if not data.invite:
        check_password(data.password)
    user = accounts.users.add(data.name, data.role, "" if data.invite else data.password)
    answer: dict[str, Any] = {"user": _view(user, set(), _first_name())}
    if data.invite:
        token, expires = accounts.invites.make(user.name)
        answer["invite"] = {"link": f"{request.host_url.rstrip('/')}{INVITE_PAGE}#{token}",
                            "expires": expires}  # fmt: skip
        answer["user"]["invited"] = True
    audit.record_request("user_added", load_settings(), name=user.name, role=user.role,
                         invited=data.invite)  # fmt: skip
    return jsonify(answer), 201


def change(name: str) -> Response:
    user = _account(name)
    data = body(UserChange)
    accounts = identity.accounts()
    own = user.name == identity.viewer()
    if not identity.is_admin():  # a member: their own password, proven by the current one
        if data.disabled is not None or data.role is not None or data.limits is not None:
            raise Forbidden("only an admin may change roles, limits or disable accounts")
        if data.password is None:
            raise UserError('send {"password", "current_password"}')
    if own and data.password is not None and user.password:
        if not verify_password(data.current_password or "", user.password):
            raise UserError("the current password is wrong: type it again")
    changes: dict[str, Any] = {k: v for k, v in (("disabled", data.disabled), ("role", data.role))
                               if v is not None}  # fmt: skip
    if data.password is not None:
        changes["password"] = check_password(data.password)
    if data.limits is not None:  # only the fields sent: null puts one back to the default
        changes.update(data.limits.model_dump(include=data.limits.model_fields_set))
    if not changes:
        raise UserError('send "disabled", "role", "password" or "limits"')
    if own and (changes.get("disabled") or changes.get("role") == "member"):
        raise UserError("you cannot disable or demote yourself: ask another admin")
    # The settings' password is the first admin's: one changed here would be put back from
    # the settings at the next request (and this session would end with it).
    if _is_first(user) and "password" in changes:
        whose = "your" if own else f"{user.name}'s"
        raise UserError(f"{whose} password is the login's in Settings (Server and security): "
                        "change it there")  # fmt: skip
    changed = accounts.users.update(user.name, **changes)
    current().forget()  # new limits count from the next step on
    if "password" in changes:
        accounts.invites.drop(user.name)
    if own and "password" in changes:  # this page goes on; their other sessions end
        sessions().keep_only(session.get("sid"), credentials(changed), changed.name)
        identity.set_user(changed)
    elif (not own or changed.disabled) and changed.stamp() != user.stamp():
        sessions().end_user(changed.name)  # their pages disconnect; their keys check `disabled`
    audit.record_request("user_changed", load_settings(), name=changed.name,
                         fields=sorted(changes))  # fmt: skip
    return jsonify({"user": changed.public()})


def remove(name: str) -> Response:
    _admin_only()
    user = _account(name)
    data = body(Leaving)
    accounts = identity.accounts()
    if data.data is None:
        raise UserError('say what becomes of their chats and files: {"data": "delete"}, or '
                        '{"data": "hand_over", "to": "<another user>"}')  # fmt: skip
    if user.name == identity.viewer():
        raise UserError("you cannot delete your own account: ask another admin")
    if _is_first(user):  # the settings would make the account again at the next request
        raise UserError(
            f"{user.name} is the login in Settings (Server and security), which makes the "
            "account again at the next request: clear that login in Settings (or "
            f"CADRE_AUTH_LOGIN where it is set; {user.name} stays an admin with the same "
            "password), then delete the account"
        )
    if user.is_admin and not user.disabled and len(accounts.users.admins()) == 1:
        raise UserError(f"{user.name} is the last enabled admin and Cadre needs one: make "
                        "another admin first")  # fmt: skip
    heir = None
    if data.data == "hand_over":
        heir = accounts.users.get(data.to)
        if heir is None or heir.name == user.name:
            raise UserError(f"there is no other user named {data.to!r} to hand them to")
    # They can do nothing more from now on (their pages and keys stop), before what they
    # had is handed over; the account itself goes last, once nothing asks where it lived.
    accounts.keys.revoke_all(user.name)
    accounts.invites.drop(user.name)
    sessions().end_user(user.name)
    handed = hand_over(chats(), user.name, heir.name if heir else None)
    # What else is theirs (tasks, notifications) follows, before their folder goes.
    for leaving in current_app.extensions.get("cadre.leaving", []):
        leaving(user.name, heir.name if heir else None, handed.projects)
    folder = accounts.retire_space(user, heir)
    accounts.users.remove(user.name)
    audit.record_request("user_deleted", load_settings(), name=user.name, data=data.data,
                         to=heir.name if heir else "", chats=handed.chats)  # fmt: skip
    return jsonify({"deleted": user.name, "chats": handed.chats, "files": folder,
                    "projects": handed.projects})  # fmt: skip


def keys_of(name: str) -> Response:
    user = _account(name)
    return jsonify({"keys": [k.public() for k in identity.accounts().keys.of(user.name)]})


def make_key(name: str) -> tuple[Response, int]:
    user = _account(name)
    data = body(NewKey)
    item, key = identity.accounts().keys.make(user.name, data.label)
    audit.record_request("key_created", load_settings(), owner=user.name, key_id=item.id)
    return jsonify({**item.public(), "key": key}), 201


def revoke_key(key_id: str) -> Response:
    accounts = identity.accounts()
    item = accounts.keys.get(key_id)
    if item is None or not (identity.is_admin() or item.owner == identity.viewer()):
        raise NotFound(f"there is no key {key_id!r}")
    accounts.keys.revoke(key_id)
    audit.record_request("key_revoked", load_settings(), owner=item.owner, key_id=item.id)
    return jsonify({"revoked": item.id})


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The account routes under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/users", "users", listing, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/users", "user_create", create, methods=["POST"])
    blueprint.add_url_rule(f"{prefix}/users/<name>", "user_change", change, methods=["PATCH"])
    blueprint.add_url_rule(f"{prefix}/users/<name>", "user_delete", remove, methods=["DELETE"])
    blueprint.add_url_rule(f"{prefix}/users/<name>/keys", "user_keys", keys_of, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/users/<name>/keys", "key_create", make_key,
                           methods=["POST"])  # fmt: skip
    blueprint.add_url_rule(f"{prefix}/keys/<key_id>", "key_revoke", revoke_key,
                           methods=["DELETE"])  # fmt: skip


user_pages = Blueprint("users", __name__)
add_routes(user_pages, "/api")
user_pages.add_url_rule("/api/me", "me", me, methods=["GET"])
