"""How a setting is shown in the settings form: its words and its heading (one of GROUPS).

The fields themselves are declared in a chain of classes, a part of the form each, read
top to bottom in the order the form shows them: helpers/settings_models.py (the models,
memory, web search, Agent 0's profile) → settings_access.py (who reaches Cadre) →
settings_limits.py (limits, timeouts, history, budgets) → settings_traces.py (traces of
runs) → settings_telegram.py (the Telegram bot) → settings.py (`Settings`: the rest, the
checks of values across fields, loading and saving).
"""

from __future__ import annotations

from typing import Any

#: The settings form's headings, in the order the page shows them.
GROUPS = (
    "Model", "Utility model", "Embeddings", "Local model", "Agents", "Memory", "Web search",
    "Voice", "Limits and timeouts", "Budget", "History", "Code execution", "Server and security",
    "Single sign-on", "MCP servers",
    "Telegram",
)  # fmt: skip


def about(title: str, description: str, group: str, unit: str = "", **extra: Any) -> dict[str, Any]:
    """A field's words for the settings form: its label, a one-line hint, its heading
    (one of GROUPS), its unit; `extra` adds what the form needs more (`secret`, `kind`,
    `options` labels of a fixed set of values)."""
    return {
        "title": title,
        "description": description,
        "json_schema_extra": {"group": group, "unit": unit, **extra},
    }
