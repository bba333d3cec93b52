"""`call_subordinate`: hand a subtask to a subordinate agent and wait for its answer.

What it does is delegation's (core/delegation/call_one.py: the contract, the
checks, budgets and the handover); this file offers it to agents by its name.
"""

from core.delegation.call_one import CallSubordinate as Delegation


class CallSubordinate(Delegation):
    """The `call_subordinate` tool."""
