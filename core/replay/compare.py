"""Whether a tool's result now is the recorded one, and the difference said in plain words.

"The same" is the text the model reads, compared after what Cadre itself varies from one
chat to the next is set aside: the chat's id in paths (a long result's saved file, an
attachment) and spaces at the ends of lines. Anything else a tool prints counts, volatile
or not: a clock, a random number, a process id in a command's output differs, and the
replay says so at that step. A replay of such a chat is made with recorded results
(`tools: recorded`), or goes on with live model calls from the difference
(`on_difference: live`); the difference item shows both texts, so a person sees at once
whether only a clock moved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: How much of each text the difference item shows.
SHOWN = 600


def normal(text: str, chat_ids: tuple[str, ...]) -> str:
    """`text` with what Cadre varies between chats set aside (see the module's words)."""
    for chat_id in chat_ids:
        if chat_id:
            text = text.replace(chat_id, "<chat>")
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def same(recorded: str, now: str, chat_ids: tuple[str, ...]) -> bool:
    return normal(recorded, chat_ids) == normal(now, chat_ids)


@dataclass(frozen=True)
class Difference:
    """The first place a replay left its record."""

    #: The agent (A0, A1, A1.2) and its step (1: its first model call).
    agent: str
    step: int
    #: The tool of that step ("" when its reply called none).
    tool: str
    recorded: str
    now: str
    #: True when the record holds no reply for the agent's next call at all.
    ran_out: bool = False

    def words(self) -> str:
        """The difference for the log, in plain words."""
        if self.ran_out:
            return (f"{self.agent} asked the model for a reply at its step {self.step}, and "
                    "the recorded chat holds none there (it was cut short, or its history "
                    "was compressed).")  # fmt: skip
        tool = f"the tool {self.tool}" if self.tool else "its reply"
        return (f"At step {self.step} of {self.agent}, {tool} gave a different result from "
                f"the recorded one.\n\nRecorded:\n{_cut(self.recorded)}\n\n"
                f"This time:\n{_cut(self.now)}")  # fmt: skip


def _cut(text: str) -> str:
    text = re.sub(r"\n{3,}", "\n\n", text.strip())
    return text if len(text) <= SHOWN else text[: SHOWN - 20] + " … (cut)"
