"""Answering held tool calls (core/approvals.py), the same for the page and the API.

The page answers a chat's log item over Socket.IO (`chat:approve`); the API lists a
chat's held calls with the chat (`GET /api/v1/chats/<id>`: `"approvals"`) and answers
one at `POST /api/v1/approvals/<id>`, where the id is `<chat id>.<item id>`: the chat
is found from the id alone, through the chat store, so a person reaches only calls of
chats they may see, and a chat another node runs hands the request to that node
(server/cluster/relay.py), as every chat's route does.

"Allow always" lasts for the rest of the chat, or is saved as a rule of the `tool_rules`
setting (an admin's choice: it changes the server's settings), which outranks the rule
that asked (helpers/tool_rules.py `with_rule`).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from core.approvals import Always, Held
from helpers import tool_rules
from helpers.errors import UserError
from helpers.settings import ENV_PREFIX, Settings, load_settings
from server.security import audit, identity

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)

#: Between a chat's id and its item's in an approval's id (neither holds one).
SEPARATOR = "."


def approval_id(chat_id: str, item_id: str) -> str:
    return f"{chat_id}{SEPARATOR}{item_id}"


def split_id(approval: str) -> tuple[str, str]:
    """The chat's and the item's id in an approval's id (UserError: not one)."""
    chat_id, _, item_id = approval.partition(SEPARATOR)
    if not chat_id or not item_id:
        raise UserError(f"{approval!r} is no approval's id: use an id a chat lists under "
                        '"approvals" (GET /api/v1/chats/<id>)')  # fmt: skip
    return chat_id, item_id


def listed(context: Chat) -> list[dict[str, Any]]:
    """The chat's held calls as the API lists them (call on the agents' loop)."""
    return [{**held.view(), "id": approval_id(context.id, held.id)}
            for held in context.approvals.held()]  # fmt: skip


def answer(context: Chat, item_id: str, allow: bool, reason: str = "",
           always: Always = "") -> Held:  # fmt: skip
    """Answer the call held as `item_id` in `context`; with `always="rule"` the allow is
    saved as a rule too (UserError: not an admin's answer, or the environment sets the
    rules; then nothing is answered)."""
    saving = allow and always == "rule"
    if saving:
        if not identity.is_admin():
            raise UserError("only an admin may save a tool rule: allow it for this chat instead")
        variable = ENV_PREFIX + "TOOL_RULES"
        if variable in os.environ:
            raise UserError(f"the tool rules are set by {variable}: change them there, or "
                            "allow it for this chat")  # fmt: skip
    held = context.approve(item_id, allow, reason, always)
    if saving:
        _save_rule(context, held)
    return held


def _save_rule(context: Chat, held: Held) -> None:
    """An allow rule for the held call, in place of (or above) the rule that asked."""
    # Imported here: the settings routes import the chat store's helpers, which import this.
    from server.routes.settings import store_settings, stored_settings

    agent = context.find_agent(held.agent)
    profile = agent.ctx.profile if agent is not None else ""
    current = load_settings().tool_rules
    asked = tool_rules.matching(current, held.names, profile, context.project)
    rule = tool_rules.ToolRule(tool=held.tool, rule="allow",
                               profile=asked.profile if asked else None,
                               project=asked.project if asked else None)  # fmt: skip
    stored = stored_settings()
    saved = [tool_rules.ToolRule.model_validate(r) for r in stored.get("tool_rules", [])]
    updated = Settings.model_validate(
        {
            **stored,
            "tool_rules": [
                r.model_dump(exclude_none=True) for r in tool_rules.with_rule(saved, rule)
            ],
        }  # fmt: skip
    )
    store_settings(updated)
    audit.record_request("settings_changed", updated, fields=["tool_rules"])
    log.info("chat %s: a tool rule saved from an answer: %s", context.id, rule)
