"""First-run setup: the providers on offer, a real test call, saving the choice.

`GET /api/setup` says whether Cadre still runs on the embedded model and how
the local model's loading goes; `POST /api/setup/test` makes a one-token call
with the chosen provider; `POST /api/setup/save` stores it and applies it to
every chat without a restart.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flask import Blueprint, Response, jsonify, request
from pydantic import ValidationError

from helpers.errors import CadreError, UserError
from helpers.llm import ChatModel
from helpers.local_model import LOCAL, is_local, local_file_check
from helpers.providers import PROVIDERS, Choice, choice_settings
from helpers.settings import Settings, load_settings, merge_settings
from initialize import model_config
from server import payloads
from server.routes import chats, error, store_settings, stored_settings

setup = Blueprint("setup", __name__)

#: Seconds a connection test may take (a local model may have to load first).
TEST_TIMEOUT = 120.0


@setup.get("/api/setup")
def status() -> Response:
    settings = load_settings()
    return jsonify({
        "chat_model": settings.chat_model,
        "embedded": is_local(settings.chat_model) and not settings.local_model_path,
        "local": LOCAL.status(),
        "providers": [dataclasses.asdict(p) for p in PROVIDERS.values()],
    })  # fmt: skip


def _choice() -> Choice:
    try:
        return Choice.model_validate(request.get_json(silent=True) or {})
    except ValidationError as exc:
        raise UserError(payloads.problem(exc)) from None


@setup.post("/api/setup/test")
def test_connection() -> Response | tuple[Response, int]:
    """One real, one-token call with the chosen provider: the reply, or why it failed."""
    try:
        choice = _choice()
        changes = choice_settings(choice)
        settings = merge_settings(load_settings(), changes)
    except UserError as exc:
        return error(str(exc))
    if is_local(settings.chat_model):
        # Loading would replace the model every chat uses: check the file instead.
        try:
            found = local_file_check(settings.local_model_path)
        except UserError as exc:
            return error(str(exc))
        return jsonify({"ok": True, "model": settings.chat_model, "reply": found})
    config = dataclasses.replace(
        model_config(settings, "chat"), retries=0, timeout=min(settings.llm_timeout, 60.0)
    )
    config.kwargs["max_tokens"] = 1
    call = ChatModel(config).complete([{"role": "user", "content": "Reply with: OK"}])
    try:
        reply = chats().runtime.submit(call).result(TEST_TIMEOUT)
    except CadreError as exc:
        return error(f"the test call failed: {exc}")
    except TimeoutError:
        return error(f"no answer in {TEST_TIMEOUT:.0f} s")
    return jsonify({"ok": True, "model": config.model, "reply": reply.text})


@setup.post("/api/setup/save")
def save() -> Response | tuple[Response, int]:
    try:
        changes = choice_settings(_choice())
    except UserError as exc:
        return error(str(exc))
    try:
        settings = Settings.model_validate({**stored_settings(), **changes})
    except ValidationError as exc:
        return error(payloads.problem(exc))
    return jsonify(_saved(store_settings(settings)))


def _saved(settings: Settings) -> dict[str, Any]:
    return {"ok": True, "chat_model": settings.chat_model, "util_model": settings.util_model}
