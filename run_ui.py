"""Cadre's entry point.

Until the browser UI is built this starts a console chat with Agent 0 on the
same runtime the UI will use: settings from `usr/settings.json` and
`CADRE_*` variables, one agents' loop thread, the answer printed when Agent
0 responds. `--host` and `--port` are accepted already for the web server.
"""

from __future__ import annotations

import argparse
import logging
import sys

from agent import AgentContext, UserMessage
from helpers import llm
from helpers.errors import CadreError
from helpers.log import LogItem
from helpers.runtime import AgentRuntime
from initialize import initialize_agent


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Cadre: hierarchical AI agents")
    parser.add_argument("--host", default="127.0.0.1", help="address of the web UI (coming)")
    parser.add_argument("--port", type=int, default=5080, help="port of the web UI (coming)")
    return parser.parse_args(argv)


def print_item(item: LogItem) -> None:
    """Show warnings as they happen; answers and errors are printed by the loop."""
    if item.type == "warning" and item.heading:
        print(f"  [warning] {item.heading}", file=sys.stderr)


def console(context: AgentContext) -> None:
    print(f"Cadre console - model {context.config.chat_model.model}. Ctrl-D to quit.")
    while True:
        try:
            text = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return
        if not text:
            continue
        try:
            answer = context.communicate(UserMessage(text)).result()
            print(f"A0> {answer}")
        except CadreError as exc:
            print(f"error: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    llm.preload()
    runtime = AgentRuntime().start()
    try:
        context = AgentContext(initialize_agent(), runtime)
        context.log.subscribe(print_item)
        console(context)
    finally:
        runtime.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
