"""Setting up a model: the providers on offer, their models, a real test call, saving.

`GET /api/setup` says whether Cadre still runs on the embedded model and how
the local model's loading goes; `POST /api/setup/models` asks the provider for
its models; `POST /api/setup/test` makes a one-token call with the chosen
provider; `POST /api/setup/save` runs that test itself (unless the same choice
passed a test a moment ago) and stores the choice only when it passed (or with
`force`, when the person insists), and applies it to every chat without a restart.
A local model file is refused where an agent could have written it, and with a
login set, a change of it needs the account's password (server/security/reauth.py).

A failed test answers `{"ok": false, "problem": ProviderFault}`: what failed
and what to do, in plain words, with the raw text as `detail`. A choice that
is incomplete (no key, no URL) answers 400 with `{"error": ...}`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from typing import Any

from flask import Blueprint, Response, current_app, jsonify
from pydantic import ValidationError

from helpers import programs
from helpers.errors import ProviderError, UserError
from helpers.settings import Settings, load_settings, merge_settings
from initialize import model_config
from models.local_model import LOCAL, is_local, local_file_check
from models.model import for_config
from models.provider_faults import ProviderFault
from models.provider_models import list_models
from models.providers import PROVIDERS, Choice, base_url, choice_settings, provider_of
from server.routes import payloads
from server.routes.routing import body, chats, error
from server.routes.settings import store_settings, stored_settings
from server.security import reauth

setup = Blueprint("setup", __name__)

#: Seconds a connection test may take (a local model may have to load first).
TEST_TIMEOUT = 120.0
#: Seconds a passed test vouches for the same choice, so Test then Save calls once.
PASSED_FOR = 600.0


def _fingerprint(settings: Settings) -> str:
    """What a test call depends on: the chat model, its URL and its key (hashed)."""
    parts = (settings.chat_model, settings.chat_api_base, settings.chat_api_key,
             settings.local_model_path)  # fmt: skip
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _passed() -> dict[str, float]:
    """This app's passed tests: fingerprint → when (kept on the app, not the module)."""
    return current_app.extensions.setdefault("cadre.setup_passed", {})


def _recently_passed(settings: Settings) -> bool:
    when = _passed().get(_fingerprint(settings))
    return when is not None and time.monotonic() - when < PASSED_FOR


@setup.get("/api/setup")
def status() -> Response:
    settings = load_settings()
    return jsonify({
        "chat_model": settings.chat_model,
        "embed_model": settings.embed_model,
        "embedded": is_local(settings.chat_model) and not settings.local_model_path,
        "local": LOCAL.status(),
        "providers": [dataclasses.asdict(p) for p in PROVIDERS.values()],
    })  # fmt: skip


#: Prefixes a provider's model name may carry instead of its own (litellm's other names).
OTHER_PREFIXES: dict[str, tuple[str, ...]] = {"ollama": ("ollama_chat/",)}


def _named(choice: Choice) -> Choice:
    """The choice with its provider's prefix in front of each model name that lacks it.

    The dialog knows the provider: "llama3.1" typed for an OpenAI-compatible URL is
    "openai/llama3.1" (refused for its missing prefix, it hid the real problem, a server
    that does not answer), and "meta-llama/Llama-3.1-8B", a name with a slash of its own,
    is "openai/meta-llama/Llama-3.1-8B".
    """
    provider = provider_of(choice)
    accepted = (provider.prefix, *OTHER_PREFIXES.get(provider.name, ()))

    def named(model: str) -> str:
        model = model.strip()
        if not provider.prefix or not model or model.startswith(accepted):
            return model
        return provider.prefix + model

    embed = None if choice.embed_model is None else named(choice.embed_model)
    return choice.model_copy(update={"model": named(choice.model), "embed_model": embed})


#: What to do, said for a person who is in this dialog (the chat's error card sends them
#: to it: "set it in Set up a model").
DIALOG_FIXES: dict[str, str] = {
    "key": (
        "Copy the key again from the provider's site, paste it in API key above and test again."
    ),
}


def _failed(fault: ProviderFault) -> Response:
    fix = DIALOG_FIXES.get(fault.kind, fault.fix)
    return jsonify({"ok": False, "problem": {**fault.to_dict(), "fix": fix}})


@setup.post("/api/setup/models")
def models() -> Response | tuple[Response, int]:
    """The provider's own list of its models (empty with a `problem` when it gave none)."""
    choice = body(Choice)
    provider = provider_of(choice)
    base = base_url(choice, provider)
    return jsonify(list_models(provider, choice.api_key, base).to_dict())


def _test(settings: Settings) -> dict[str, Any] | ProviderFault:
    """One real, one-token call with `settings`' chat model: its answer, or the fault."""
    if is_local(settings.chat_model):
        # Loading would replace the model every chat uses: check the file instead.
        try:
            programs.check_model_file(settings.local_model_path, settings)
            found = local_file_check(settings.local_model_path)
        except UserError as exc:
            return ProviderFault("other", str(exc), "Choose a .gguf model file.")
        return {"ok": True, "model": settings.chat_model, "reply": found}
    config = dataclasses.replace(
        model_config(settings, "chat"), retries=0, timeout=min(settings.llm_timeout, 60.0)
    )
    config.kwargs["max_tokens"] = 1
    call = for_config(config).complete([{"role": "user", "content": "Reply with: OK"}])
    try:
        reply = chats().runtime.submit(call).result(TEST_TIMEOUT)
    except ProviderError as exc:
        if exc.fault is not None:
            return exc.fault
        return ProviderFault("other", "The test call failed.", "See Details.", str(exc))
    except TimeoutError:
        return ProviderFault(
            "timeout",
            f"The provider did not answer in {TEST_TIMEOUT:.0f} s.",
            "Check that the server runs and is not busy, then test again.",
        )
    return {"ok": True, "model": config.model, "reply": reply.text}


@setup.post("/api/setup/test")
def test_connection() -> Response | tuple[Response, int]:
    """One real, one-token call with the chosen provider: the reply, or why it failed."""
    changes = choice_settings(_named(body(Choice)))
    settings = merge_settings(load_settings(), changes)
    outcome = _test(settings)
    if isinstance(outcome, ProviderFault):
        return _failed(outcome)
    _passed()[_fingerprint(settings)] = time.monotonic()
    return jsonify(outcome)


@setup.post("/api/setup/save")
def save() -> Response | tuple[Response, int]:
    """Store the choice once its test call passed (or `force`), and apply it at once."""
    choice = _named(body(Choice))
    changes = choice_settings(choice)
    stored = stored_settings()
    try:
        settings = Settings.model_validate({**stored, **changes})
    except ValidationError as exc:
        return error(payloads.problem(exc))
    # A model file is parsed inside Cadre's process: never one an agent could have written,
    # and (with a login) changed only with the account's password, as in Settings.
    programs.check_model_file(settings.local_model_path, settings)
    try:
        current = Settings.model_validate(stored)
    except ValidationError:  # what this choice repairs: compared with the defaults
        current = Settings()
    refused = reauth.password_refusal(programs.guarded_changes(current, settings))
    if refused is not None:
        return refused
    candidate = merge_settings(load_settings(), changes)
    if not choice.force and not _recently_passed(candidate):
        outcome = _test(candidate)
        if isinstance(outcome, ProviderFault):
            return _failed(outcome)
    return jsonify(_saved(store_settings(settings)))


def _saved(settings: Settings) -> dict[str, Any]:
    return {
        "ok": True,
        "chat_model": settings.chat_model,
        "util_model": settings.util_model,
        "embed_model": settings.embed_model,
    }
