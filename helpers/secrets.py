"""Secrets: never shown, never stored, usable by tools through a placeholder.

One rule (`chat_masker`): API keys, the login password and the values of the
`secrets` setting are replaced by `***` in everything that leaves a tool or
reaches a person, a model or the disk: history, the log, agent data, memory,
utility-model prompts, chat files and exports (and the server log). Each value is
found as written and in the encodings programs commonly give it (base64, hex,
percent-encoding, reversed: helpers/secret_forms.py says which, and what is not
caught).

An agent uses a secret by writing `§§secret(NAME)` in a tool argument. The
placeholder is replaced by the value only in the arguments a tool marks as
needing it (a command line, keyboard input, a file's content: see
`core.tool.EXPANDS_SECRETS`); everywhere else the tool gets the text as the
model wrote it, placeholder included, with any secret value in it masked.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from typing import Any

from helpers import a2a_agents, model_presets, secret_forms
from helpers.fallback_entries import FALLBACK_FIELDS
from helpers.mcp_config import SECRET_PLACEHOLDER, fill_secrets, mcp_secret_values
from helpers.nested import map_strings
from helpers.settings import Settings
from helpers.settings_traces import header_values

MASK = "***"
#: Shorter values are not masked: they would blot out ordinary words.
MIN_LENGTH = 4
#: `§§secret(NAME)`, as an MCP server's settings name a secret too.
PLACEHOLDER = SECRET_PLACEHOLDER
_SECRET_FIELDS = ("chat_api_key", "util_api_key", "embed_api_key", "api_key", "auth_password",
                  "oidc_client_secret", "stt_api_key", "tts_api_key",
                  "telegram_bot_token")  # fmt: skip


def secret_values(settings: Settings) -> list[str]:
    values = [getattr(settings, name) for name in _SECRET_FIELDS]
    values += [entry.api_key for name in FALLBACK_FIELDS for entry in getattr(settings, name)]
    presets = model_presets.secret_values(settings.model_presets)  # their keys too
    traces = header_values(settings.tracing_headers)  # a trace collector's key
    remote = a2a_agents.secret_values(settings.a2a_agents)  # remote A2A agents' keys
    return [*values, *settings.secrets.values(), *mcp_secret_values(settings.mcp_servers),
            *presets, *traces, *remote]  # fmt: skip


def chat_masker(settings: Settings) -> SecretMasker:
    """The masking rule of a chat made with `settings`."""
    return SecretMasker(secret_values(settings))


class SecretMasker:
    """Replaces known secret values, and their encoded forms, by `***` in text and nested
    data."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values = frozenset(v for v in values if v and len(v) >= MIN_LENGTH)
        self._finder = _finder(self.values)

    def __bool__(self) -> bool:
        return bool(self._finder)

    def mask(self, text: str) -> str:
        return self._finder.replace(text, MASK)

    def mask_value(self, value: Any) -> Any:
        """`value` with every string in it masked (nested dicts and lists too)."""
        return map_strings(value, self.mask) if self._finder else value


@functools.lru_cache(maxsize=16)
def _finder(values: frozenset[str]) -> secret_forms.FormFinder:
    """The finder of `values`' forms, made once for every chat with the same secrets
    (making one takes a millisecond or two; each chat's settings make a masker)."""
    return secret_forms.FormFinder(form for value in values for form in secret_forms.forms(value))


def expand_secrets(value: Any, secrets: dict[str, str], unknown: list[str]) -> Any:
    """`value` with each `§§secret(NAME)` replaced by the secret; unknown names are listed."""
    return map_strings(value, lambda text: fill_secrets(text, secrets, unknown))


def refresh_log_masking(values: list[str]) -> None:
    """New secrets (a key just saved) are masked in the server log from now on, beside each
    filter's lasting ones."""
    for handler in logging.getLogger().handlers:
        for found in handler.filters:
            if isinstance(found, MaskingFilter):
                found.masker = SecretMasker([*values, *found.lasting])


class MaskingFilter(logging.Filter):
    """Masks secrets in server log records (install it on the log handlers). `lasting`:
    secrets that are no setting (the cluster's Redis password), kept when the settings'
    secrets are made anew."""

    def __init__(self, masker: SecretMasker, lasting: list[str] | None = None) -> None:
        super().__init__()
        self.lasting = list(lasting or [])
        self.masker = SecretMasker([*masker.values, *self.lasting]) if self.lasting else masker

    def filter(self, record: logging.LogRecord) -> bool:
        if self.masker:
            record.msg = self.masker.mask(record.getMessage())
            record.args = None
        return True
