"""Settings from the environment: each `CADRE_<FIELD>` variable, read as its field's kind
(helpers/settings.py lays them over the stored settings)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic.fields import FieldInfo

from helpers.errors import UserError

#: The prefix of every setting's environment variable: `CADRE_CHAT_MODEL`.
ENV_PREFIX = "CADRE_"


def env_values(fields: Mapping[str, FieldInfo]) -> dict[str, Any]:
    """The `CADRE_<FIELD>` variables of `fields` (the settings' schema), decoded: JSON for
    dict fields, a JSON array or comma-separated names for list fields, text otherwise;
    UserError in plain words for a value that cannot be read."""
    overrides: dict[str, Any] = {}
    for name, field in fields.items():
        raw = os.environ.get(ENV_PREFIX + name.upper())
        if raw is None:
            continue
        kind = str(field.annotation)
        if kind.startswith("list"):
            if raw.lstrip().startswith("{"):  # one entry alone: not a name '{"model": ...}'
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON array ([...]) or "
                                "names separated by commas, not one JSON object: put it "
                                "in [ ], or unset it")  # fmt: skip
            try:
                overrides[name] = (
                    json.loads(raw)
                    if raw.lstrip().startswith("[")
                    else [part.strip() for part in raw.split(",") if part.strip()]
                )
            except json.JSONDecodeError as exc:
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON array ({exc}): "
                                "correct it, or unset it") from exc  # fmt: skip
        elif "dict" in kind:
            try:
                overrides[name] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON object ({exc}): "
                                "correct it, or unset it") from exc  # fmt: skip
        else:
            overrides[name] = raw
    return overrides
