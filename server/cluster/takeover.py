"""A dead node's chat, taken over by this node: read from the shared folder as a restart
reads it, then going on by itself (or waiting for its user, as the settings say).

The node's lease watch (cluster/redis_runs.py) finds a chat whose lease expired while it
was on the runs list, takes the lease and calls `TakeOver` on a thread of its own. The chat
is read again from disk (its last save, at most a paced save's interval behind the step the
dead node was in: helpers/paced_save.py), its cut step marked as a restart marks it, and
its delegation chain restored; the agent whose step was cut is told that a node failure
cut it and that it may have partly run (prompts/fw.msg_resumed_node.md), and goes on.
Pages watching it see it go on: its news now comes from this node.
"""

from __future__ import annotations

import logging
import time

from cluster.leases import HANDED
from helpers.errors import CadreError
from helpers.settings import load_settings
from store.chats import ChatManager

log = logging.getLogger(__name__)


class TakeOver:
    """Takes over the chats of dead nodes for `chats`, this node's chat store."""

    def __init__(self, chats: ChatManager) -> None:
        self.chats = chats

    def __call__(self, chat_id: str, former: str) -> None:
        began = time.monotonic()
        handed = former.startswith(HANDED)  # it stopped and handed the chat over
        node = former.removeprefix(HANDED)
        how = "was shut down" if handed else "failed"
        try:
            context = self.chats.read_again(chat_id)  # the dead node's last save
        except CadreError as exc:
            log.warning("chat %s of node %s cannot be taken over: %s", chat_id, node, exc)
            return
        if not context.interrupted or context.running:
            log.info("chat %s of node %s had ended its run: nothing to take over", chat_id, node)
            return
        if not load_settings().takeover_continues:
            context.log.log("warning", "Node stopped",
                            f"Node {node}, which ran this chat, {how} while it worked."
                            " Continue it when you are ready.")  # fmt: skip
            self.chats.save_now(context)
            log.warning("chat %s of node %s waits for its user (takeover_continues is off)",
                        chat_id, node)  # fmt: skip
            return
        try:
            context.continue_interrupted(failed_node=node, how=how)
        except CadreError as exc:
            log.error("chat %s of node %s could not go on here: %s", chat_id, node, exc)
            return
        log.warning("took over chat %s of node %s in %.0f ms: it goes on here", chat_id, node,
                    (time.monotonic() - began) * 1000)  # fmt: skip
