"""A tool call waiting for approval, as a Telegram message with Allow and Deny buttons, and
the button's answer read back.

A button carries `ok:<chat id>:<item id>` or `no:...` (Telegram allows 64 bytes: a chat id is
16 characters, an item's 12), so an answer needs nothing kept in memory and still works
after a restart (the chat restores the call held: core/approvals.py).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from server.apis.telegram.watch import Waiting

#: The most characters of a call's arguments shown.
ARGS_SHOWN = 1500


@dataclass(frozen=True)
class Decision:
    chat_id: str
    item_id: str
    allow: bool


def approval_text(waiting: Waiting) -> str:
    """The request in HTML: who asks to run what, with which arguments."""
    args = json.dumps(waiting.args, ensure_ascii=False, indent=1)
    if len(args) > ARGS_SHOWN:
        args = args[:ARGS_SHOWN] + " …"
    return (f"<b>{html.escape(waiting.agent)}</b> asks to run <b>{html.escape(waiting.tool)}"
            f"</b>:\n<pre>{html.escape(args, quote=False)}</pre>")  # fmt: skip


def approval_buttons(chat_id: str, waiting: Waiting) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[
        InlineKeyboardButton("Allow", callback_data=f"ok:{chat_id}:{waiting.item_id}"),
        InlineKeyboardButton("Deny", callback_data=f"no:{chat_id}:{waiting.item_id}"),
    ]])  # fmt: skip


def decision(data: str) -> Decision | None:
    """The answer a button carries; None when the data is no approval's."""
    kind, _, rest = data.partition(":")
    chat_id, _, item_id = rest.partition(":")
    if kind not in ("ok", "no") or not chat_id or not item_id:
        return None
    return Decision(chat_id, item_id, kind == "ok")
