"""`python3 cadre.py replay CHAT_ID [--tools recorded] [--on-difference live]`.

Replays a saved chat in this process, as the chat menu and `POST /api/v1/chats/<id>/replay`
do in the server's (store/replaying.py): the new chat is saved in usr/chats/ like any
other, so the page shows it once Cadre runs. It prints the new chat's id and how the
replay ended, and exits 0 when it followed the record (or went on live as asked), 1 when
it stopped at a difference or a run failed, 2 when it could not start. It works on usr/
alone: while Cadre runs on the same usr/ it refuses (replay from the page or the API then).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import logging
import sys
from typing import TextIO

from core import tracing
from helpers.errors import NotFound, UserError
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import replaying
from store.backup import swap
from store.chats import ChatManager

BUSY = (
    "Cadre is running on this usr/: replay the chat from its menu in the page, or with "
    "POST /api/v1/chats/<id>/replay."
)
#: The longest a replay may take here, by default (seconds).
TIMEOUT = 3600.0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cadre.py replay", description="Replay a saved chat into a new chat."
    )
    parser.add_argument("chat_id", help="the id of the chat to replay")
    parser.add_argument(
        "--tools",
        choices=replaying.TOOLS,
        default="rerun",
        help="run the tools again (rerun) or give their recorded results",
    )
    parser.add_argument(
        "--on-difference",
        choices=replaying.ON_DIFFERENCE,
        default="stop",
        help="at the first difference: stop, or go on with live model calls",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        help="seconds the replay may take (default: an hour)",
    )
    return parser.parse_args(argv)


def replay(args: argparse.Namespace, out: TextIO) -> int:
    """The replay of `args.chat_id`, said on `out`; the exit status."""
    runtime = AgentRuntime().start()
    chats = ChatManager(runtime, ChatFactory(runtime))
    try:
        chats.load_saved()
        try:
            started = replaying.start_replay(
                chats, args.chat_id, None, args.tools, args.on_difference
            )
        except NotFound:
            out.write(
                f"No chat {args.chat_id!r} in this usr/: see the ids in the chat list "
                "or GET /api/v1/chats.\n"
            )
            return 2
        out.write(f"Replay chat: {started.chat.id}\n")
        out.flush()
        try:
            outcome = started.done.result(args.timeout)
        except concurrent.futures.TimeoutError:
            started.chat.stop()  # what it did so far is saved; the chat is an ordinary one
            with contextlib.suppress(concurrent.futures.TimeoutError):
                started.done.result(30)  # its end said and saved
            out.write(f"The replay took more than {args.timeout:g} s and was stopped; the "
                      "chat keeps what it did so far. Give --timeout more seconds.\n")  # fmt: skip
            return 1
        difference = started.replay.difference
        if difference is not None:
            out.write(difference.words() + "\n")
        out.write(f"{replaying.ENDINGS.get(outcome, replaying.ENDINGS['failed'])}\n")
        out.write(f"Replies from the record: {started.replay.replies}\n")
        return 0 if outcome in ("followed", "live") else 1
    finally:
        chats.close_sessions()
        runtime.stop()
        tracing.shutdown()  # the runs' last spans sent before the process ends


def main(argv: list[str], out: TextIO = sys.stdout) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse(argv)
    try:
        with swap.exclusive(BUSY):
            return replay(args, out)
    except UserError as exc:
        out.write(f"{exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
