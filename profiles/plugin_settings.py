"""A plugin's settings section: fields declared in its plugin.yaml, checked as Settings'.

    settings:
      - name: city                 # letters, digits and '_'
        title: City                # the field's label (as Settings' `about` title)
        description: Where to look up the weather.   # its one-line hint
        type: text                 # text | number | integer | boolean | choice
        default: Paris
        min: 0                     # numbers: bounds
        max: 100
        unit: km                   # shown after the field
        options: {c: Celsius, f: Fahrenheit}        # choice: value -> label

The values are kept in `usr/plugin_settings.json` (`{plugin: {field: value}}`), outside
the plugin's folder, so an update keeps them; a value is checked by a pydantic model made
from the fields (the same words as Settings' errors), `values(name)` gives a plugin's
handlers and tools their current values (the defaults for what is unset).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from helpers.errors import UserError
from helpers.files import usr_path, write_text_atomic
from profiles.plugins import Plugin, discover_plugins

_lock = threading.Lock()
_KINDS = {"text": str, "number": float, "integer": int, "boolean": bool}


class SettingField(BaseModel):
    """One declared field."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
    title: str
    description: str = ""
    type: Literal["text", "number", "integer", "boolean", "choice"] = "text"
    default: Any = None
    min: float | None = None
    max: float | None = None
    unit: str = ""
    options: dict[str, str] = Field(default_factory=dict)


def fields_of(plugin: Plugin) -> list[SettingField]:
    """The plugin's declared fields (UserError in plain words when one is malformed)."""
    declared = plugin.manifest.settings if plugin.manifest else []
    try:
        return [SettingField.model_validate(item) for item in declared]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"plugin.yaml: settings: {where}: {first['msg']}") from None


def _model(fields: list[SettingField]) -> type[BaseModel]:
    made: dict[str, Any] = {}
    for field in fields:
        kind: Any = (Literal[tuple(field.options)] if field.type == "choice" and field.options
                     else _KINDS.get(field.type, str))  # fmt: skip
        bounds = {k: v for k, v in (("ge", field.min), ("le", field.max)) if v is not None}
        made[field.name] = (kind | None, Field(field.default, title=field.title, **bounds))
    return create_model("PluginSettings", __config__=ConfigDict(extra="forbid"), **made)


def _file() -> Any:
    return usr_path("plugin_settings.json")


def _all() -> dict[str, Any]:
    try:
        data = json.loads(_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def values(name: str) -> dict[str, Any]:
    """Plugin `name`'s settings now: what was saved over the declared defaults."""
    plugin = discover_plugins().get(name)
    if plugin is None:
        return {}
    defaults = {f.name: f.default for f in fields_of(plugin)}
    saved = _all().get(name)
    return {**defaults, **(saved if isinstance(saved, dict) else {})}


def save(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """Check `given` against plugin `name`'s fields and keep it; the values now."""
    plugin = discover_plugins().get(name)
    if plugin is None or not plugin.usable:
        raise UserError(f"no usable plugin {name!r}")
    fields = fields_of(plugin)
    try:
        checked = _model(fields).model_validate({**values(name), **given})
    except ValidationError as exc:
        first = exc.errors()[0]
        label = next((f.title for f in fields if f.name == first["loc"][0]), first["loc"][0])
        raise UserError(f"{label}: {re.sub(r'^Value error, ', '', first['msg'])}") from None
    with _lock:
        data = _all()
        data[name] = checked.model_dump()
        _file().parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(_file(), json.dumps(data, indent=2, sort_keys=True))
    return values(name)


def settings_section(plugin: Plugin) -> dict[str, Any]:
    """The section the page draws: the fields, with their current values (or the problem)."""
    try:
        fields = fields_of(plugin)
    except UserError as exc:
        return {"fields": [], "error": str(exc)}
    current = values(plugin.name) if fields else {}
    return {"fields": [{**f.model_dump(), "value": current.get(f.name)} for f in fields],
            "error": ""}  # fmt: skip
