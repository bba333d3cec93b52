"""`call_subordinates`: hand several independent subtasks to subordinates working at once.

What it does is delegation's (core/delegation/call_many.py); this file offers
it to agents by its name.
"""

from core.delegation.call_many import CallSubordinates as Delegation


class CallSubordinates(Delegation):
    """The `call_subordinates` tool."""
