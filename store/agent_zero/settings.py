"""Agent Zero's settings, model keys and secrets, in Cadre's settings' words.

Agent Zero keeps its models in `usr/settings.json` as a provider id and a
model name per role (`chat_model_provider`, `chat_model_name`,
`chat_model_api_base`, `chat_model_kwargs`, `chat_model_ctx_length`; the same
with `util_model_` and `embed_model_`), their keys in `usr/.env`
(`API_KEY_<PROVIDER>` or `<PROVIDER>_API_KEY`), the key of its external API in
`mcp_server_token`, and the secrets agents use as `§§secret(NAME)` in
`usr/secrets.env` (dotenv lines, names upper-cased). Cadre names a model
`<litellm provider>/<name>` with its address, key, parameters and context
length beside it, and keeps secrets and keys in its settings.

This module only says what Agent Zero's values become (`Change`s, or why one
is left); store/agent_zero/usr.py decides what is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

#: Agent Zero's provider ids that litellm calls otherwise, with the address Agent Zero
#: gives them when the settings have none (its Docker host's name read as this machine).
PROVIDERS: dict[str, tuple[str, str]] = {
    "google": ("gemini", ""),
    "other": ("openai", ""),
    "a0_venice": ("openai", "https://llm.agent-zero.ai/v1"),
    "venice": ("openai", "https://api.venice.ai/api/v1"),
    "avian": ("openai", "https://api.avian.io/v1"),
    "nebius": ("openai", "https://api.tokenfactory.nebius.com/v1"),
    "ollama_cloud": ("openai", "https://ollama.com/v1"),
    "zai": ("openai", "https://api.z.ai/api/paas/v4"),
    "zai_coding": ("openai", "https://api.z.ai/api/coding/paas/v4"),
    "lm_studio": ("lm_studio", "http://localhost:1234/v1"),
    "ollama": ("ollama", "http://localhost:11434"),
    "llama_cpp": ("hosted_vllm", "http://localhost:8080/v1"),
    "vllm": ("hosted_vllm", "http://localhost:8000/v1"),
    "omlx": ("hosted_vllm", "http://localhost:8000/v1"),
}
#: Embedding providers Agent Zero reaches otherwise than its chat ones.
EMBED_PROVIDERS = {**PROVIDERS, "openrouter": ("openai", "https://openrouter.ai/api/v1")}
#: Agent Zero's role prefix → Cadre's.
ROLES = {"chat_model": "chat", "util_model": "util", "embed_model": "embed"}
#: Agent Zero's Docker host name: Cadre runs on the host itself.
DOCKER_HOST = "host.docker.internal"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Change:
    """A Cadre setting and the value Agent Zero's gives it; `secret`: never print it."""

    field: str
    value: Any
    secret: bool = False
    note: str = ""


@dataclass(frozen=True)
class Left:
    """Something of Agent Zero's that is not brought over, and why."""

    what: str
    why: str


def model_changes(a0: dict[str, Any], keys: dict[str, str]) -> list[Change | Left]:
    """Cadre's model settings from Agent Zero's settings.json and its `.env` keys."""
    found: list[Change | Left] = []
    for prefix, role in ROLES.items():
        provider, name = a0.get(f"{prefix}_provider"), a0.get(f"{prefix}_name")
        if not (isinstance(provider, str) and provider and isinstance(name, str) and name):
            continue
        if role == "embed" and provider == "huggingface":
            found.append(Left(f"setting {role}_model", f"Agent Zero runs its huggingface "
                              f"embedding model ({name}) itself; Cadre keeps its own"))  # fmt: skip
            continue
        table = EMBED_PROVIDERS if role == "embed" else PROVIDERS
        litellm, default_base = table.get(provider, (provider, ""))
        found.append(Change(f"{role}_model", f"{litellm}/{name}"))
        base = a0.get(f"{prefix}_api_base")
        base = base.strip() if isinstance(base, str) and base.strip() else default_base
        if base:
            local = base.replace(DOCKER_HOST, "localhost")
            note = f"({DOCKER_HOST} read as localhost)" if local != base else ""
            found.append(Change(f"{role}_api_base", local, note=note))
        kwargs = a0.get(f"{prefix}_kwargs")
        if isinstance(kwargs, dict) and kwargs:
            found.append(Change(f"{role}_kwargs", {str(k): _typed(v) for k, v in kwargs.items()}))
        length = a0.get(f"{prefix}_ctx_length")
        if role != "embed" and type(length) is int and length > 0:
            found.append(Change(f"{role}_ctx_length", length))
        # A 1.x model section may hold its own key; else the provider's from usr/.env.
        own = a0.get(f"{prefix}_api_key")
        own = own.strip() if isinstance(own, str) and own.strip() != "None" else ""
        upper = provider.upper()
        key = own or keys.get(f"API_KEY_{upper}") or keys.get(f"{upper}_API_KEY")
        if key:
            found.append(Change(f"{role}_api_key", key, secret=True))
    token = a0.get("mcp_server_token")
    if isinstance(token, str) and token:
        found.append(Change("api_key", token, secret=True,
                            note="(the key Agent Zero's API clients send)"))  # fmt: skip
    return found


def _typed(value: Any) -> Any:
    """Agent Zero keeps model parameters as text ("0.2"); litellm wants the number."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def parse_env(text: str) -> tuple[dict[str, str], list[int]]:
    """NAME=value lines of a dotenv file (names upper-cased, as Agent Zero reads them), and
    the numbers of the lines that are neither such a pair, a comment nor blank."""
    pairs: dict[str, str] = {}
    bad: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.removeprefix("export ").partition("=")
        name = name.strip()
        if not sep or not _NAME.fullmatch(name):
            bad.append(number)
            continue
        pairs[name.upper()] = _env_value(value.strip())
    return pairs, bad


def _env_value(raw: str) -> str:
    """A value as dotenv reads it: quoted (double quotes know \\n, \\" and \\\\), or bare
    up to an inline comment."""
    if raw.startswith("'") and raw.find("'", 1) > 0:
        return raw[1 : raw.find("'", 1)]
    if raw.startswith('"'):
        end = raw.find('"', 1)
        while end > 0 and raw[end - 1] == "\\":
            end = raw.find('"', end + 1)
        if end > 0:
            inner = raw[1:end]
            return inner.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()
