"""A Cadre process for restart tests: loads saved chats, sends one message, reports.

    python -m tests.support.chat_process send MESSAGE
    python -m tests.support.chat_process send MESSAGE --chat ID

Prints JSON lines: {"chat": id, "interrupted": bool, "working": n} after
loading, {"item": ...} for every log change, and {"answer": ...} at the end.
Settings come from the environment (CADRE_*), as for run_ui.py.
"""

from __future__ import annotations

import argparse
import json
import sys

from agent import UserMessage
from helpers.chats import ChatManager
from helpers.runtime import AgentRuntime
from initialize import ChatFactory


def emit(**data: object) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["send"])
    parser.add_argument("message")
    parser.add_argument("--chat")
    args = parser.parse_args()
    runtime = AgentRuntime().start()
    chats = ChatManager(runtime, ChatFactory(runtime))
    chats.load_saved()
    context = chats.get(args.chat) if args.chat else chats.new_chat()
    working = context.working_agent.number if context.working_agent else None
    emit(chat=context.id, interrupted=context.interrupted, working=working)
    context.log.subscribe(
        lambda item: emit(
            item={
                "type": item.type,
                "agentno": item.agentno,
                "heading": item.heading,
                "content": item.content,
            }
        )  # fmt: skip
    )
    answer = context.communicate(UserMessage(args.message)).result(60)
    chats.save_now(context)
    emit(answer=answer)
    runtime.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
