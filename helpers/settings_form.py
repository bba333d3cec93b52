"""How the settings form shows each setting, built from the fields' own metadata.

Every field of `helpers.settings.Settings` carries its label, hint, heading and unit
(`about(...)`); this module adds what follows from its type: the control (a menu for a
fixed set of values, a checkbox for a yes/no, a number box with the field's bounds, a
text area for a list or a JSON object) and whether an environment variable sets it.
The page renders the form from this list alone, so no label lives in JavaScript.
"""

from __future__ import annotations

import typing
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic.fields import FieldInfo

from helpers.settings import GROUPS, Settings, overridden_fields

#: text | password | apikey | profile | number | bool | choice | lines | json | secrets |
#: mcp_servers (the MCP servers' JSON, with its own editor and status) | json_list (a JSON
#: list of objects: the fallback models) | model_presets (a list of presets, with its own
#: editor: helpers/model_presets.py)
Kind = Literal[
    "text", "password", "apikey", "profile", "number", "bool", "choice", "lines", "json",
    "secrets", "mcp_servers", "json_list", "model_presets",
]  # fmt: skip


@dataclass(frozen=True)
class Option:
    value: str
    label: str


@dataclass(frozen=True)
class FormField:
    """One setting as the form shows it."""

    name: str
    title: str
    description: str
    group: str
    kind: Kind
    unit: str = ""
    options: list[Option] = field(default_factory=list)
    #: Bounds and step of a number box (None: unbounded; "any": a decimal number).
    minimum: float | None = None
    maximum: float | None = None
    step: str = "any"
    #: Masked ("***") when sent to the page; "***" sent back keeps the stored value.
    secret: bool = False
    #: The environment variable that sets it ("" when none): read-only in the form.
    env: str = ""


def _extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def secret_fields() -> frozenset[str]:
    """The fields whose values never leave the server in clear (API keys, the password)."""
    fields = Settings.model_fields.items()
    return frozenset(name for name, info in fields if _extra(info).get("secret"))


def _kind(info: FieldInfo, extra: dict[str, Any]) -> Kind:
    if extra.get("kind"):
        return typing.cast(Kind, extra["kind"])
    kind = info.annotation
    origin = typing.get_origin(kind)
    if kind is bool:
        return "bool"
    if kind in (int, float):
        return "number"
    if origin is Literal:
        return "choice"
    if origin is list:
        return "lines"
    if origin is dict:
        return "json"
    return "password" if extra.get("secret") else "text"


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    """The number box's min and max, from the field's own constraints (an int's exclusive
    bound becomes the next whole number; a decimal's stays, and the server says why)."""
    whole = info.annotation is int
    low = high = None
    for rule in info.metadata:
        if isinstance(rule, Ge):
            low = rule.ge
        elif isinstance(rule, Gt):
            low = rule.gt + 1 if whole else rule.gt
        elif isinstance(rule, Le):
            high = rule.le
        elif isinstance(rule, Lt):
            high = rule.lt - 1 if whole else rule.lt
    return low, high


def _options(info: FieldInfo, extra: dict[str, Any]) -> list[Option]:
    labels = extra.get("options") or {}
    return [Option(str(v), labels.get(v, str(v))) for v in typing.get_args(info.annotation)]


def form_fields() -> list[FormField]:
    """Every setting, in the order of the form's headings, then of the class."""
    env = overridden_fields()
    found = []
    for name, info in Settings.model_fields.items():
        extra = _extra(info)
        kind = _kind(info, extra)
        low, high = _bounds(info) if kind == "number" else (None, None)
        found.append(FormField(
            name=name,
            title=info.title or name.replace("_", " ").capitalize(),
            description=info.description or "",
            group=extra.get("group") if extra.get("group") in GROUPS else "More",
            kind=kind,
            unit=extra.get("unit", ""),
            options=_options(info, extra) if kind == "choice" else [],
            minimum=low,
            maximum=high,
            step="1" if info.annotation is int else "any",
            secret=bool(extra.get("secret")),
            env=env.get(name, ""),
        ))  # fmt: skip
    order = {group: place for place, group in enumerate((*GROUPS, "More"))}
    return sorted(found, key=lambda f: order[f.group])


def form_description() -> dict[str, Any]:
    """The form as the page receives it: the headings in order and the fields."""
    fields = form_fields()
    groups = [g for g in (*GROUPS, "More") if any(f.group == g for f in fields)]
    return {"groups": groups, "fields": [asdict(f) for f in fields]}
