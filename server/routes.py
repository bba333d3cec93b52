"""HTTP routes of the page: static files, health, settings, profiles, chat files."""

from __future__ import annotations

import json
import os
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, send_from_directory
from pydantic import TypeAdapter, ValidationError

from helpers.errors import UserError
from helpers.files import base_path
from helpers.settings import (
    ENV_PREFIX,
    Settings,
    load_settings,
    overridden_fields,
    save_settings,
    settings_path,
)
from helpers.settings_form import form_description
from initialize import preload_local_models
from models.tokens import count_tokens
from profiles.catalog import discover_profiles
from server import auth, guard, views
from server.attachments import save_attachment
from store.chats import ChatManager

WEBUI = base_path("webui")

pages = Blueprint("pages", __name__)


def chats() -> ChatManager:
    manager: ChatManager = current_app.extensions["cadre.chats"]
    return manager


def error(message: str, status: int = 400) -> tuple[Response, int]:
    return jsonify({"error": message}), status


@pages.get("/")
def index() -> Response:
    response = send_from_directory(WEBUI, "index.html")
    response.headers["Cache-Control"] = "no-cache"
    return response


@pages.get("/<any(js, css, vendor, img):folder>/<path:name>")
def static_file(folder: str, name: str) -> Response:
    # send_from_directory refuses paths that leave the folder.
    return send_from_directory(WEBUI / folder, name)


@pages.get("/health")
def health() -> Response:
    """A liveness check for anyone; the number of chats only for a logged-in caller."""
    if not guard.logged_in():
        return jsonify({"status": "ok"})
    return jsonify({"status": "ok", "chats": len(chats())})


@pages.get("/api/settings")
def get_settings() -> Response:
    """The settings (secrets masked); with `?form=1`, also how the form shows each field."""
    values = views.masked_settings(load_settings())
    if request.args.get("form"):
        return jsonify({"values": values, **form_description()})
    return jsonify(values)


def _env_conflict(changes: dict[str, Any]) -> str:
    """Take out of `changes` the fields an environment variable sets, when they hold the
    value it sets (the page sends them back as shown: they must not reach the file);
    the error when one would change (saved, it would never apply)."""
    applied = load_settings()
    for name, variable in overridden_fields().items():
        if name not in changes:
            continue
        value = changes.pop(name)
        if name in views.SECRET_FIELDS:
            if value == views.MASK:
                continue
            # Never compared: accepting a matching value would let a guess be tested.
            return f"{name} is set by {variable}; change it there"
        if name == "secrets" and isinstance(value, dict):
            value = {k: applied.secrets.get(k) if v == views.MASK else v for k, v in value.items()}
        kind = TypeAdapter(Settings.model_fields[name].annotation)
        try:
            same = kind.validate_python(value) == getattr(applied, name)
        except ValidationError:
            same = False
        if not same:
            return f"{name} is set by {variable}; change it there"
    return ""


@pages.post("/api/settings")
def post_settings() -> Response | tuple[Response, int]:
    changes = request.get_json(silent=True)
    if not isinstance(changes, dict):
        return error("send the settings to change as a JSON object")
    unknown = sorted(set(changes) - set(Settings.model_fields))
    if unknown:
        return error(f"unknown setting(s): {', '.join(unknown)}")
    conflict = _env_conflict(changes)
    if conflict:
        return error(conflict, 409)
    stored = stored_settings()
    for name in views.SECRET_FIELDS & changes.keys():
        if changes[name] == views.MASK:  # the page shows "***": keep what is stored
            changes[name] = stored.get(name, "")
    if isinstance(changes.get("secrets"), dict):
        kept = stored.get("secrets") or {}
        changes["secrets"] = {
            name: kept.get(name, "") if value == views.MASK else value
            for name, value in changes["secrets"].items()
        }
    if changes.get("auth_password") and not auth.is_hashed(changes["auth_password"]):
        changes["auth_password"] = auth.hash_password(changes["auth_password"])
    try:
        updated = Settings.model_validate({**stored, **changes})
    except ValidationError as exc:
        first = exc.errors()[0]
        return error(f"{first['loc'][0]}: {first['msg']}")
    before = guard.credentials(load_settings())
    applied = store_settings(updated)
    if guard.credentials(applied) != before:
        guard.renew_session(applied)  # the other sessions end; this one goes on
    return jsonify(views.masked_settings(applied))


@pages.post("/api/settings/api_key/reveal")
def reveal_api_key() -> Response:
    """The external API key in clear, for the user to copy (a POST: it needs the CSRF token)."""
    return jsonify({"api_key": load_settings().api_key})


@pages.post("/api/settings/api_key/regenerate")
def regenerate_api_key() -> Response | tuple[Response, int]:
    """Replace the external API key; the old one stops working at once."""
    if os.environ.get(ENV_PREFIX + "API_KEY") is not None:
        return error(f"the API key is set by {ENV_PREFIX}API_KEY; change it there", 409)
    key = auth.new_api_key()
    save_settings(Settings.model_validate({**stored_settings(), "api_key": key}))
    return jsonify({"api_key": key})


def store_settings(updated: Settings) -> Settings:
    """Save settings and put them to work: in every chat, and the local model they name.
    Returns them as they now apply (the environment's overrides included)."""
    save_settings(updated)
    chats().apply_settings()
    applied = load_settings()
    preload_local_models(applied)
    return applied


def stored_settings() -> dict[str, Any]:
    """What settings.json holds (not the environment's overrides, which stay out of it)."""
    path = settings_path()
    if not path.exists():
        return Settings().model_dump()
    return {**Settings().model_dump(), **json.loads(path.read_text(encoding="utf-8"))}


@pages.get("/api/profiles")
def profiles() -> Response:
    found = discover_profiles(request.args.get("project") or None)
    return jsonify([views.profile_view(p) for _, p in sorted(found.items())])


@pages.post("/api/chats/<chat_id>/attachments")
def upload(chat_id: str) -> Response | tuple[Response, int]:
    chats().get(chat_id)
    upload = request.files.get("file")
    if upload is None or not upload.filename:
        return error("send the file as multipart field 'file'")
    return jsonify({"path": save_attachment(chat_id, upload.filename, upload.stream)})


@pages.get("/api/chats/<chat_id>/export")
def export(chat_id: str) -> Response:
    document = chats().export(chat_id)
    response = jsonify(document)
    name = f"cadre-chat-{chat_id}.json"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@pages.post("/api/chats/import")
def import_chat() -> Response | tuple[Response, int]:
    document = request.get_json(silent=True)
    if document is None:
        return error("send an exported chat as JSON")
    context = chats().import_chat(document)
    return jsonify({"chat": chats().runtime.call(views.chat_summary, context)})


@pages.get("/api/chats/<chat_id>/context")
def prompt_context(chat_id: str) -> Response | tuple[Response, int]:
    context = chats().get(chat_id)
    try:
        number = int(request.args.get("agent", "0"))
    except ValueError:
        return error("agent must be an agent's number")
    agent = next((a for a in context.agents() if a.number == number), None)
    if agent is None:
        return error(f"this chat has no agent {number}", 404)
    messages = list(agent.last_prompt)
    tokens = sum(count_tokens(m["content"]) for m in messages)
    return jsonify({"agent": number, "messages": messages, "tokens": tokens})


@pages.errorhandler(UserError)
def user_error(exc: UserError) -> tuple[Response, int]:
    status = 404 if str(exc).startswith("no chat with id") else 400
    return error(str(exc), status)
