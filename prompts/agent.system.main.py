"""Variables of the main system prompt: who this agent is and whom it answers."""

from __future__ import annotations

import platform
from datetime import datetime
from typing import Any


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    superior = getattr(context, "superior", None)  # `context` is the agent the prompt is for
    return {
        "agent_name": getattr(context, "agent_name", "A0"),
        "profile": getattr(getattr(context, "config", None), "profile", "") or "default",
        "superior_name": superior.agent_name if superior is not None else "",
        # The date only: a prompt that changes every minute defeats providers' prompt caches.
        "date": datetime.now().astimezone().strftime("%Y-%m-%d (%A)"),
        "os_name": f"{platform.system()} {platform.release()}",
        # Agent Zero's prompts name the product so; its profiles run here unchanged.
        "brand_name": "Cadre",
    }
