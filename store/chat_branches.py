"""Branches: a new chat holding another as it stood at one of its log items.

The parent's record is cut at the item (core/chat_cut.py: every agent's history,
the log, the delegation tree and the run's state as they were there), given a
new id, a name after its parent and a link back (`ChatFile.parent`: the parent's
id and the item), and its folder's files come along (attachments, saved long
results, images), the paths in its history and log moved to the new folder. The
parent is left as it is: its branches are the chats that name it as their
parent, which the chat list nests under it. `ChatManager.branch` takes the
snapshot and lists the new chat.
"""

from __future__ import annotations

import json
import logging
import shutil
import time

from core.chat import Chat
from core.chat_cut import cut_record
from core.chat_record import ChatFile, ParentLink
from helpers import folders
from helpers.chat_names import NAME_LIMIT
from store.persist_chat import SUMMARY_FILE

log = logging.getLogger(__name__)

#: What a branch's name adds to its parent's.
SUFFIX = " (branch)"
#: What of the parent's folder stays the parent's: its record, and the live state of its
#: sessions (code sessions, the browser's profile, MCP servers' files).
NOT_COPIED = frozenset({folders.CHAT_FILE, SUMMARY_FILE, folders.CODE, folders.MCP, "browser"})
#: Said in a branch cut inside a run, in place of a restart's words.
MID_RUN = (
    "This branch starts inside a run of the chat it came from, at the step above."
    " Continue, or send a message, to go on from here."
)


def branch_name(parent: str, taken: set[str]) -> str:
    """The name "<parent> (branch)", numbered ("(branch 2)") when a chat of that name exists."""
    base = parent[: NAME_LIMIT - len(SUFFIX) - 4].rstrip() or "Chat"
    names = (f"{base} (branch{f' {n}' if n > 1 else ''})" for n in range(1, len(taken) + 2))
    return next(name for name in names if name not in taken)


def branch_record(
    parent: ChatFile, at: int, new_id: str, edit: bool = False, taken: frozenset[str] = frozenset()
) -> ChatFile:
    """The record of a branch of `parent` at log item `at` (`edit`: just before it, a message
    of the user's that the branch runs edited; `taken`: names of the owner's chats);
    UserError says why there is none."""
    cut = cut_record(parent, at, before=edit)
    now = time.time()
    branch = cut.model_copy(
        update={
            "id": new_id,
            "name": branch_name(parent.name, set(taken)),
            "parent": ParentLink(id=parent.id, at=at),
            "created_at": now,
            "last_message": now,
        }
    )
    return ChatFile.model_validate_json(_moved(branch.model_dump_json(), parent.id, new_id))


def attachments_of(parent: ChatFile, at: int, new_id: str) -> list[str]:
    """The attachments of the user's message at item `at`, as the branch's files."""
    kvps = parent.log.get("items", [])[at].get("kvps") or {}
    files = kvps.get("attachments") or []
    return [_moved(str(path), parent.id, new_id) for path in files if isinstance(path, str)]


def _moved(text: str, parent_id: str, new_id: str) -> str:
    """`text` (JSON, or a path) naming the branch's folder where it named the parent's:
    attachments and saved results are named by their paths."""
    # With the separator after it: no other chat's folder whose id starts alike.
    old, new = (json.dumps(f"{folders.chat_dir(i)}/")[1:-1] for i in (parent_id, new_id))
    return text.replace(old, new)


def copy_files(parent_id: str, branch_id: str) -> None:
    """The parent's attachments, saved results and images, copied into the branch's folder."""
    source, target = folders.chat_dir(parent_id), folders.chat_dir(branch_id)
    target.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return
    for entry in source.iterdir():
        if entry.name in NOT_COPIED or entry.name.startswith(".") or entry.is_symlink():
            continue  # a link would bring along what it points to, wherever that is
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, target / entry.name)


def tell_mid_run(context: Chat) -> None:
    """A branch cut inside a run says so where a restored chat says Cadre stopped."""
    if not context.interrupted or not context.log.items:
        return
    item = context.log.items[-1]
    if item.type == "info":
        item.update(heading="Branched inside a run", content=MID_RUN)
