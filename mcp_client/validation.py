"""An MCP tool's arguments checked against its input schema, before the call.

The problems come back in words a model can act on (`a: 'two' is not of type
'integer'`). A schema that is itself broken checks nothing: the server judges.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, SchemaError
from jsonschema.validators import validator_for

#: Problems listed at most (the first ones, by where they are).
PROBLEMS_SHOWN = 5


def argument_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """What is wrong with `arguments` for `schema` ("path: message"); empty when they fit."""
    try:
        kind = validator_for(schema, default=Draft202012Validator)
        kind.check_schema(schema)
        errors = sorted(kind(schema).iter_errors(arguments), key=lambda e: list(e.path))
    except SchemaError:
        return []
    except Exception:  # noqa: BLE001 - a schema valid in form can still fail to apply
        return []  # (an unknown type, a $ref to nowhere): the server judges
    return [
        f"{'.'.join(str(p) for p in error.path) or 'tool_args'}: {error.message}"
        for error in errors[:PROBLEMS_SHOWN]
    ]
