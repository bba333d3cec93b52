"""Agent Zero 1.x's model settings: its `_model_config` plugin's configuration.

From 1.0 Agent Zero keeps the chat, utility and embedding models not in
settings.json but in the configuration of its always-on `_model_config` plugin:
`usr/plugins/_model_config/config.json` (JSON; a project's own at
`usr/projects/<name>/.a0proj/plugins/_model_config/config.json`, a profile's at
`usr/agents/<name>/plugins/_model_config/config.json`), with one section per
role (`chat_model`, `utility_model`, `embedding_model`), each with `provider`,
`name`, `api_base`, `ctx_length`, `kwargs` and an optional `api_key`. Their keys
stay in `usr/.env` as before. This module reads the global one into the older
settings.json's field names, so store/agent_zero/settings.py maps both layouts
the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from store.agent_zero.common import Report, readable

#: Where 1.x keeps it, under usr/.
CONFIG = Path("plugins", "_model_config", "config.json")
#: 1.x's section → the older settings.json's field prefix.
SECTIONS = {"chat_model": "chat_model", "utility_model": "util_model",
            "embedding_model": "embed_model"}  # fmt: skip
FIELDS = ("provider", "name", "api_base", "ctx_length", "kwargs", "api_key")
#: Largest configuration read (it is a few hundred bytes).
LIMIT = 1024 * 1024


def read_model_config(source: Path, report: Report) -> dict[str, Any]:
    """The global model configuration of the 1.x `source` as settings.json fields
    (`chat_model_provider`, ...); {} when there is none, or it is damaged (reported)."""
    path = source / CONFIG
    if not readable(path, report) or not path.is_file():
        return {}
    try:
        if path.stat().st_size > LIMIT:
            raise ValueError(f"over {LIMIT // 1024} KB")
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        report.left(CONFIG.as_posix(), f"damaged, the model settings not read: {exc}")
        return {}
    flat: dict[str, Any] = {}
    for section, prefix in SECTIONS.items():
        values = data.get(section)
        if not isinstance(values, dict):
            continue
        for name in FIELDS:
            if name in values:
                flat[f"{prefix}_{name}"] = values[name]
    return flat
