"""User settings: one pydantic model, stored in `usr/settings.json` (mode 0600).

Every field can be overridden by an environment variable `CADRE_<FIELD>`
(`CADRE_CHAT_MODEL=openai/gpt-4.1-mini`, `CADRE_API_KEY=...`). Overrides are
applied when settings are loaded and never written back to the file, so a key
given in the environment does not end up on disk.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helpers.errors import UserError
from helpers.files import usr_path, write_text_atomic

log = logging.getLogger(__name__)

ENV_PREFIX = "CADRE_"


class Settings(BaseModel):
    """Everything a user can configure. Field names are the stored keys."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    # Chat model: the one that runs the agents' loops. The default is the small
    # embedded model, so Cadre works with no provider; onboarding sets a real one.
    chat_model: str = "local/qwen2.5-coder-1.5b"
    chat_api_base: str = ""
    chat_api_key: str = ""
    chat_ctx_length: int = Field(default=128_000, gt=0)
    chat_kwargs: dict[str, Any] = Field(default_factory=dict)

    # Utility model: summaries, chat names, memory work.
    util_model: str = "local/qwen2.5-coder-1.5b"
    util_api_base: str = ""
    util_api_key: str = ""
    util_ctx_length: int = Field(default=128_000, gt=0)
    util_kwargs: dict[str, Any] = Field(default_factory=dict)

    # Embedding model: memory and knowledge search.
    embed_model: str = "openai/text-embedding-3-small"
    embed_api_base: str = ""
    embed_api_key: str = ""
    embed_ctx_length: int = Field(default=8_192, gt=0)
    embed_kwargs: dict[str, Any] = Field(default_factory=dict)

    #: Local (`local/<name>`) models: the GGUF file (empty: the built-in Qwen2.5-Coder 1.5B),
    #: its context length and CPU threads (0: all).
    local_model_path: str = ""
    local_ctx_length: int = Field(default=8_192, ge=512)
    local_threads: int = Field(default=0, ge=0)
    #: Hold replies to the reply schema: local models always; remote ones when "on",
    #: or "auto" where litellm says the model supports a response schema.
    structured_output: Literal["auto", "on", "off"] = "auto"

    #: The memory area chats use when they belong to no project.
    memory_area: str = "default"
    #: Before an agent starts on a message, put the most relevant memories (and
    #: knowledge) into its prompt, up to this many tokens (0: off).
    memory_recall_tokens: int = Field(default=600, ge=0)
    #: After each run, ask the utility model whether the work solved something worth
    #: remembering, and save it to the `solutions` memories.
    memory_memorize: bool = False
    #: A SearXNG instance for the search_engine tool (empty: none).
    searxng_url: str = ""

    #: Agent 0's profile (a folder name under agents/ or usr/agents/).
    agent_profile: str = "agent0"
    #: Key of the external HTTP API; empty disables it.
    api_key: str = ""
    #: Login for the web UI (required when serving on an address other than loopback).
    auth_login: str = ""
    auth_password: str = ""
    #: Host names (besides loopback names and the address Cadre serves on) that the
    #: browser may use to reach Cadre: a name of this machine, or a reverse proxy's.
    allowed_hosts: list[str] = Field(default_factory=list)
    #: Addresses of reverse proxies whose `X-Forwarded-For` header names the client.
    trusted_proxies: list[str] = Field(default_factory=list)
    #: Secrets tools may use as §§secret(NAME); their values are never shown or stored.
    secrets: dict[str, str] = Field(default_factory=dict)

    #: Consecutive unusable replies (bad JSON, unknown tool, ...) before a run stops.
    max_unusable_replies: int = Field(default=3, ge=1)
    #: Retries of a transient provider error (429, 5xx, connection) before the first chunk.
    llm_retries: int = Field(default=3, ge=0)
    #: First retry delay in seconds; doubled on each further retry.
    llm_retry_delay: float = Field(default=1.0, ge=0)
    #: Seconds a whole model call may take, streaming included, before it is ended.
    llm_timeout: float = Field(default=600.0, gt=0)
    #: Seconds to wait for a model's first streamed chunk (after each retry, anew).
    llm_first_chunk_timeout: float = Field(default=120.0, gt=0)
    #: Seconds of silence between two streamed chunks before the stream counts as stalled.
    llm_between_chunks_timeout: float = Field(default=60.0, gt=0)
    #: Longest reply, in characters, a model may stream; past it the call is ended and
    #: the model is told to answer shorter (a repairable error).
    llm_max_reply_chars: int = Field(default=200_000, ge=1_000)
    #: The agents' work folder (commands run there; §§include may read it). Empty: usr/workdir.
    work_dir: str = ""
    #: code_execution_tool: seconds to wait for a command's first output.
    code_exec_first_output_timeout: float = Field(default=30.0, gt=0)
    #: code_execution_tool: seconds of silence, once output came, before returning.
    code_exec_between_output_timeout: float = Field(default=15.0, gt=0)
    #: code_execution_tool: most seconds one call waits (the command keeps running after).
    code_exec_max_timeout: float = Field(default=180.0, gt=0)
    #: Ask the user to approve each command before it runs.
    code_exec_confirm: bool = False
    #: The Node.js program the nodejs runtime runs.
    code_exec_node: str = "node"
    #: Variables added to the minimal environment code sessions start with (PATH, HOME,
    #: LANG, ...): nothing of Cadre's own environment (provider keys) reaches a command
    #: unless it is named here.
    code_exec_env: dict[str, str] = Field(default_factory=dict)
    #: Share of the chat model's context length the history may take (the rest:
    #: system prompt, extras, the reply).
    history_ratio: float = Field(default=0.7, gt=0, lt=1)
    #: How the history's share is split: current topic, sealed topics, bulks.
    history_current_share: float = Field(default=0.5, gt=0, lt=1)
    history_topics_share: float = Field(default=0.3, gt=0, lt=1)
    history_bulks_share: float = Field(default=0.2, gt=0, lt=1)
    #: Chat budget (0: none): tokens, US dollars and model calls over the chat's
    #: life, and seconds per run. Running out: the agent answers, then the run stops.
    budget_tokens: int = Field(default=0, ge=0)
    budget_cost: float = Field(default=0.0, ge=0)
    budget_calls: int = Field(default=0, ge=0)
    budget_seconds: float = Field(default=0.0, ge=0)
    #: Deepest agent number a delegation may create (Agent 0 delegates to 1, ...).
    max_delegation_depth: int = Field(default=5, ge=0)

    # -- issue 17, model part: the built-in model and guards for every model --
    #: Calls in one monologue that repeat an earlier call with the same arguments
    #: (and, for commands, the same output) before the run stops as going round in circles.
    max_repeated_calls: int = Field(default=3, ge=1)


def settings_path() -> Path:
    return usr_path("settings.json")


def _env_overrides() -> dict[str, Any]:
    """`CADRE_<FIELD>` variables, decoded: JSON for dict fields, a JSON array or
    comma-separated names for list fields, text otherwise."""
    overrides: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        raw = os.environ.get(ENV_PREFIX + name.upper())
        if raw is None:
            continue
        kind = str(field.annotation)
        if kind.startswith("list"):
            try:
                overrides[name] = (
                    json.loads(raw)
                    if raw.lstrip().startswith("[")
                    else [part.strip() for part in raw.split(",") if part.strip()]
                )
            except json.JSONDecodeError as exc:
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON array: {exc}") from exc
        elif "dict" in kind:
            try:
                overrides[name] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON object: {exc}") from exc
        else:
            overrides[name] = raw
    return overrides


def _read_file(path: Path) -> dict[str, Any]:
    """The stored settings; a damaged file is set aside (never lost) and defaults used."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        Settings.model_validate(data)
        return data
    except (ValueError, ValidationError) as exc:
        kept = path.with_name(f"settings.damaged-{int(time.time())}.json")
        os.replace(path, kept)
        log.error("settings file %s is damaged (%s); moved to %s, using defaults", path, exc, kept)
        return {}


def load_settings() -> Settings:
    """Stored settings with environment overrides applied."""
    data = _read_file(settings_path())
    data.update(_env_overrides())
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"invalid settings: {exc}") from exc


def save_settings(settings: Settings) -> None:
    """Store settings (owner-only: the file holds API keys)."""
    text = json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True)
    write_text_atomic(settings_path(), text + "\n", mode=0o600)


def merge_settings(base: Settings, overrides: dict[str, Any] | None) -> Settings:
    """`base` with some fields replaced, validated (an unknown field is a UserError)."""
    if not overrides:
        return base
    unknown = set(overrides) - set(Settings.model_fields)
    if unknown:
        raise UserError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    try:
        return Settings.model_validate({**base.model_dump(), **overrides})
    except ValidationError as exc:
        raise UserError(f"invalid settings: {exc}") from exc
