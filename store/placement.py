"""Where a chat runs, when Cadre is one node of several (cluster mode): the seam the chat
store asks, filled by the server with the node's leases (cluster/).

A process alone has no placement: every chat is its own. In a cluster, a chat that runs
on another node is that node's until its run ends: `ChatManager.get` raises `Elsewhere`
for it, and the server hands the request to that node (server/cluster/relay.py). A chat
that runs nowhere may be read or run by any node, which reads it again from the shared
folder first when another node changed it meanwhile.
"""

from __future__ import annotations

from typing import Protocol

from helpers.errors import CadreError, Unavailable


class Elsewhere(CadreError):
    """The chat runs on another node now: what asks for it goes there."""

    def __init__(self, chat_id: str, node: str) -> None:
        super().__init__(f"chat {chat_id} runs on node {node}")
        self.chat_id = chat_id
        self.node = node


class ClusterDown(Unavailable):
    """Where a chat runs cannot be known now (the cluster's Redis does not answer), or the
    node that runs it cannot be reached: said in words, with what to do (HTTP 503)."""


class Placement(Protocol):
    def holds(self, chat_id: str) -> bool:
        """Does this node hold the chat's lease (it runs it, is about to, or just did)?
        Then the shared folder's copy is this node's own: nothing to ask or read again.
        Answered from memory, never from Redis."""
        ...

    def may_write(self, chat_id: str) -> bool:
        """May this node write the chat's file? Not once another node took it over while
        this one still ran it (it stalled past its lease): the file is theirs."""
        ...

    def check(self, chat_id: str) -> None:
        """Elsewhere when another node runs the chat now; ClusterDown when that cannot be
        known."""
        ...
