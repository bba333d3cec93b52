"""A saved chat replayed into a new chat (core/replay): made, marked, fed its messages.

`start_replay` makes the replay chat (the source's owner and project, named "Replay of
…", marked with `replay_of`, its model seam the replay's) and feeds it the source's user
messages in a thread of its own, each once the run before it has ended, with their
attachments copied into the new chat's folder. It stops feeding when the replay stops at
a difference or a run fails; the last log item says how it ended. The page's route, the
API's and `python3 cadre.py replay` (store/replay_cli.py) all come here.
"""

from __future__ import annotations

import concurrent.futures
import logging
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from core import chat_record
from core.agent_types import UserMessage
from core.replay import record
from core.replay.session import OnDifference, Replay, State, Tools
from helpers import folders
from helpers.errors import UserError

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

log = logging.getLogger(__name__)

TOOLS: tuple[str, ...] = get_args(Tools)
ON_DIFFERENCE: tuple[str, ...] = get_args(OnDifference)

#: How each outcome is said at the end of the replay chat's log (and by the command line).
ENDINGS: dict[str, str] = {
    "followed": "The replay followed the record to the end: every reply came from the "
    "record, and no model was called.",
    "stopped": "The replay stopped at the first difference from the record (above).",
    "live": "The replay left the record at the difference above and went on with live model calls.",
    "failed": "The replay ended early: a run failed (see above).",
}


@dataclass
class Started:
    """A replay under way."""

    chat: Chat
    replay: Replay
    #: Settles with the outcome (a `State`, or "failed") once the replay has ended.
    done: concurrent.futures.Future[str]


def start_replay(chats: ChatManager, source_id: str, viewer: str | None,
                 tools: str = "rerun", on_difference: str = "stop") -> Started:  # fmt: skip
    """Replay chat `source_id` (one `viewer` may see: NotFound otherwise) into a new chat."""
    if tools not in TOOLS:
        raise UserError(f"tools must be one of {', '.join(TOOLS)}, not {tools!r}")
    if on_difference not in ON_DIFFERENCE:
        raise UserError(f"on_difference must be one of {', '.join(ON_DIFFERENCE)}, "
                        f"not {on_difference!r}")  # fmt: skip
    source = chats.get(source_id, viewer)
    if source.running:
        raise UserError("This chat is working now: replay it once its run has ended.")
    recording = record.read(chats.runtime.call(chat_record.snapshot, source))
    if not recording.turns:
        raise UserError("This chat has no message of yours to replay.")
    replay = Replay(recording, tools, on_difference)  # type: ignore[arg-type]
    # The source's own settings (its profile, its model choice) for the replay chat too.
    context = chats.new_chat(source.project, source.owner, **source.overrides)
    turns = [_with_attachments(turn, source.id, context.id) for turn in recording.turns]
    chats.runtime.call(_mark, context, replay, source.name)
    chats.save_now(context)
    done: concurrent.futures.Future[str] = concurrent.futures.Future()
    feeding = threading.Thread(target=_feed, args=(chats, context, replay, turns, done),
                               name=f"replay-{context.id}", daemon=True)  # fmt: skip
    feeding.start()
    log.info("chat %s: replaying chat %s (tools %s, on a difference %s)", context.id,
             source.id, tools, on_difference)  # fmt: skip
    return Started(context, replay, done)


def _mark(context: Chat, replay: Replay, source_name: str) -> None:
    """On the agents' loop: the new chat named, marked and given the replay's model seam."""
    context.name = f"Replay of {source_name or 'a chat'}"[:100]
    replay.attach(context)
    tools = ("tools run again and their results are compared with the record"
             if replay.tools == "rerun" else "tools give their recorded results")  # fmt: skip
    after = "stops" if replay.on_difference == "stop" else "goes on with live model calls"
    incomplete = ("" if replay.recording.complete else " Part of the record was compressed: "
                  "the replay holds only the replies still on record.")  # fmt: skip
    context.log.log("info", "Replay",
                    f"A replay of the chat {source_name or replay.recording.chat_id!r}: its "
                    f"messages again, the model's recorded replies instead of new calls; "
                    f"{tools}. At the first difference it {after}.{incomplete}",
                    kvps={"replay_of": replay.recording.chat_id})  # fmt: skip


def _with_attachments(turn: record.UserTurn, source_id: str, chat_id: str) -> record.UserTurn:
    """`turn` with its attachments copied into the replay chat's folder (their new paths)."""
    old, new = folders.chat_dir(source_id).resolve(), folders.chat_dir(chat_id).resolve()
    paths = []
    for raw in turn.attachments:
        path = Path(raw)
        try:
            inside = path.resolve().relative_to(old)
        except (ValueError, OSError):
            paths.append(raw)  # not the chat's own file: named as it was
            continue
        target = new / inside
        if path.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        paths.append(str(target))
    return record.UserTurn(turn.message, tuple(paths))


def _feed(chats: ChatManager, context: Chat, replay: Replay, turns: list[record.UserTurn],
          done: concurrent.futures.Future[str]) -> None:  # fmt: skip
    """The replay chat's messages, each once the run before it has ended."""
    outcome: str = "failed"
    try:
        failed = False
        for turn in turns:
            handle = context.communicate(UserMessage(turn.message, list(turn.attachments)))
            try:
                handle.result()
            except (concurrent.futures.CancelledError, Exception) as exc:
                # Stopped at a difference (said already), or the run failed: no more turns.
                failed = replay.state != "stopped"
                if failed:
                    log.info("chat %s: a replayed run ended early: %r", context.id, exc)
                break
        state: State = chats.runtime.call(replay.end)
        outcome = "failed" if failed else state
    except Exception:
        log.exception("chat %s: the replay failed", context.id)
    finally:
        chats.runtime.call(_say_end, context, replay, outcome)
        try:
            chats.save_now(context)
        except Exception:
            log.exception("chat %s: the replay's end was not saved", context.id)
        done.set_result(outcome)


def _say_end(context: Chat, replay: Replay, outcome: str) -> None:
    replay.ended = True
    words = ENDINGS.get(outcome, ENDINGS["failed"])
    context.log.log("info", "Replay ended", words,
                    kvps={"replay": outcome, "replies": replay.replies})  # fmt: skip
