"""Which node runs a chat, as the server asks it: the chat store's placement (store/
placement.py) and the run gate's lease, both over this process's node (cluster/).

- `NodePlacement.check`: a chat whose lease another live node holds runs there, so what
  asks for it is handed to that node (`Elsewhere`, answered by server/cluster/relay.py).
- `place`: a run about to start on a chat no node runs (or on a new chat) is offered to
  the cluster's run queue first; the least busy node takes it, and the request goes there.
- `LeasedGate`: the run gate takes the chat's lease as the run starts, so two nodes can
  never both run one chat; when Redis does not answer, no run starts (in words), while
  the runs going on go on.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING

from flask import g, has_request_context

from cluster.node import Node, NodesUnknown
from core.events import RunEnded
from core.run_gate import RunGate
from store.placement import ClusterDown, Elsewhere

if TYPE_CHECKING:
    from core.chat import Chat
    from models.llm import Usage
    from store.chats import ChatManager

log = logging.getLogger(__name__)


class NodePlacement:
    """The chat store's placement over `node` (store/placement.py)."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def holds(self, chat_id: str) -> bool:
        return self.node.holds(chat_id)

    def may_write(self, chat_id: str) -> bool:
        return self.node.may_write(chat_id)

    def check(self, chat_id: str) -> None:
        try:
            holder = self.node.holder(chat_id)
        except NodesUnknown as exc:
            raise ClusterDown(str(exc)) from None
        if holder is not None:
            raise Elsewhere(chat_id, holder)


def relayed() -> bool:
    """Was this request handed over by another node (which placed it here already)?"""
    return has_request_context() and g.get("cadre_relayed") is not None


def place(chats: ChatManager, context: Chat | None) -> None:
    """Before a message starts a run in `context` (None: in a chat the request makes):
    Elsewhere when the cluster's run queue gives the run to another node. Nothing to do in
    a process alone, for a chat that runs here (the message is an intervention), for a
    request another node placed here already, or outside a web request (the MCP server's
    calls and scheduled tasks run where they are asked)."""
    node = _node_of(chats)
    if node is None or not has_request_context() or relayed():
        return  # a process alone; a run asked for outside a request (MCP, tasks) runs here
    if context is not None and context.running:
        return
    try:
        taker = node.place_run(context.id if context is not None else None)
    except NodesUnknown as exc:
        raise ClusterDown(str(exc)) from None
    if taker != node.config.node_id:
        raise Elsewhere(context.id if context is not None else "", taker)


def _node_of(chats: ChatManager) -> Node | None:
    placement = chats.placement
    return placement.node if isinstance(placement, NodePlacement) else None


class LeasedGate(RunGate):
    """`inner`'s limits, then the chat's lease for a run that starts on this node (given up
    soon after the run ends: the node is told so)."""

    def __init__(self, inner: RunGate, node: Node) -> None:
        self.inner = inner
        self.node = node
        #: The chats told to tell the node when their runs end (asked on the agents' loop).
        self._told: weakref.WeakSet[Chat] = weakref.WeakSet()

    def start_refusal(self, chat: Chat) -> str:
        why = self.inner.start_refusal(chat)
        if why:
            return why
        if self.node.health().get("redis") != "ok":  # no wait on a Redis known to be gone
            raise ClusterDown(
                "the cluster's Redis does not answer, so no new run can start now; chats"
                " already running go on. Try again once Redis is back"
            )
        try:
            holder = self.node.take_run(chat.id)
        except NodesUnknown as exc:
            raise ClusterDown(str(exc)) from None
        if holder == self.node.config.node_id and chat not in self._told:
            self._told.add(chat)
            chat.events.subscribe(RunEnded, lambda _: self.node.run_ended(chat.id))
        if holder != self.node.config.node_id:
            log.warning("chat %s: a run was to start on node %s, but node %s holds it",
                        chat.id, self.node.config.node_id, holder)  # fmt: skip
            raise ClusterDown(f"this chat has just started on node {holder}: send your"
                              " message again and it goes there")  # fmt: skip
        return ""

    def new_run_refusal(self, owner: str | None) -> str:
        return self.inner.new_run_refusal(owner)

    def step_refusal(self, chat: Chat) -> str:
        return self.inner.step_refusal(chat)

    def spent(self, chat: Chat, usage: Usage) -> None:
        self.inner.spent(chat, usage)
