"""How many tasks `call_subordinates` takes at once (for its prompt)."""

from __future__ import annotations

from typing import Any


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    return {"max_tasks": context.config.settings.max_parallel_subordinates}
