"""What each person spent on models, as the page and the external API show it:

    GET /api/usage, /api/v1/usage    an admin: every account; a member: their own

Each row: today's tokens, cost and model calls (days are UTC days: a daily limit resets
at midnight UTC), the last 30 days' sum and each of those days that had any, the limits
the person works under (accounts/limits.py) and how many of their chats run now. The
numbers come from the usage ledger (accounts/usage.py) the run gate keeps
(server/run_limits.py). In the desktop mode (no account) the one row is the one person's,
named null.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from accounts.limits import view
from accounts.usage import KEPT_DAYS, Spent, day_of
from server.run_limits import AccountLimits, current
from server.security import identity


def _row(gate: AccountLimits, name: str | None, today: str) -> dict[str, Any]:
    days = gate.ledger.window(name or "")
    total = Spent()
    for spent in days.values():
        total.add(spent)
    return {
        "name": name,
        "today": days.get(today, Spent()).view(),
        f"last_{KEPT_DAYS}_days": total.view(),
        "days": [{"day": day, **spent.view()} for day, spent in days.items()],
        "limits": view(gate.limits_of(name)),
        "running": gate.running(name),
    }


def usage() -> Response:
    gate = current()
    accounts = identity.accounts()
    viewer = identity.viewer()
    if not accounts.required():
        names: list[str | None] = [None]
    elif identity.is_admin():
        names = [u.name for u in accounts.users.all()]
    else:
        names = [viewer]
    today = day_of(gate.ledger.now())
    return jsonify({"day": today, "resets": "midnight UTC",
                    "users": [_row(gate, name, today) for name in names]})  # fmt: skip


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The usage route under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/usage", "usage", usage, methods=["GET"])


usage_pages = Blueprint("usage", __name__)
add_routes(usage_pages, "/api")
