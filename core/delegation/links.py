"""An agent's links to its subordinates: linking a new one (or several at once) and
cutting them loose.

The subordinates a later delegation replaces (an A1 once a team A1.1-A1.3 starts; the
siblings once one goes on alone) are cut loose from their superior, so nothing runs
them or sends them a message again, and kept on record (`Agent.retired`, saved): the
page's tree lists them and their Context opens, as their tokens stay in the chat's
total. One whose name a new subordinate takes (a reset's new A1) is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.agent import Agent


def link_siblings(superior: Agent, siblings: list[Agent]) -> None:
    """Make `siblings` the subordinates of `superior` (the last is current); those they
    replace are cut loose and kept on record."""
    names = {sibling.agent_name for sibling in siblings}
    replaced = [a for a in superior.subordinates if not any(a is s for s in siblings)]
    kept = [a for a in (*superior.retired, *replaced) if a.agent_name not in names]
    unlink_subordinates(superior)
    superior.retired = kept
    for sibling in siblings:
        sibling.superior = superior
    superior.subordinates = list(siblings)


def unlink_subordinates(superior: Agent) -> None:
    """Cut every subordinate of `superior` loose (a reset, or their work was dropped), and
    forget those kept on record."""
    for subordinate in superior.subordinates:
        subordinate.superior = None
    superior.subordinates = []
    superior.retired = []
