"""JSON request bodies, bounded in depth: a deeply nested body is a 400 that says so.

Python's parser recurses once per level, so `[[[[...` a hundred thousand deep
raises RecursionError (a 500) instead of the ValueError that a bad body gives;
and a body just under that limit would make every later recursive walk fail.
"""

from __future__ import annotations

from typing import Any

from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import BadRequest

#: Deepest nesting of lists and objects a request body may have.
MAX_DEPTH = 200


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Does `value` nest lists and dicts more than `limit` levels? (No recursion.)"""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


class BoundedJSONProvider(DefaultJSONProvider):
    """Flask's JSON, refusing bodies nested deeper than MAX_DEPTH with a 400."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        problem = f"JSON nested too deeply (more than {MAX_DEPTH} levels of lists and objects)"
        try:
            value = super().loads(s, **kwargs)
        except RecursionError:
            raise BadRequest(problem) from None
        if too_deep(value):
            raise BadRequest(problem)
        return value
