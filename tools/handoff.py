"""`handoff`: Agent 0 passes the conversation with the user to another profile.

What it does is delegation's (core/delegation/handoff.py); this file offers it
to agents by its name.
"""

from core.delegation.handoff import Handoff as Delegation


class Handoff(Delegation):
    """The `handoff` tool."""
