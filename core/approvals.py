"""Tool calls held for a person's yes or no (the tool policy's `ask`: helpers/tool_rules.py).

The gate (core/tooling/approval_gate.py) holds a call with `hold(held)` and awaits the
future it gets; the page or the API answers with `decide(item_id, answer)`. Both run on
the agents' event loop. Each call is held under the id of its log item, so siblings
working at once each hold their own and an answer releases exactly one.

A chat saved while a call was held comes back with it held (`restore`): nobody waits
for it in the new process until the run goes on, so an answer given before that is
kept on the call (`Held.answer`) and the gate takes it when the agent calls again.
A run stopped while waiting cancels the wait; nothing is left pending.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

#: How far an "allow" goes: this call only, every such call of this chat, or a saved rule.
Always = Literal["", "chat", "rule"]


@dataclass(frozen=True)
class Answer:
    """A person's answer to a held call (or the wait's end, `timed_out`)."""

    allow: bool
    #: Why not, in the person's words: the agent reads it.
    reason: str = ""
    always: Always = ""
    timed_out: bool = False


@dataclass
class Held:
    """One held call, as the API lists it (`id`, `agent`, `tool`, `args`)."""

    #: The id of the log item that shows the call.
    id: str
    #: The name of the agent that made it ("A0", "A1.2").
    agent: str
    #: The call's most specific name in rules: "browser:open", "mcp:<server>:<tool>".
    tool: str
    #: Its arguments, as the log shows them.
    args: dict[str, Any]
    #: Every name rules may give the call, the most specific first (helpers/tool_rules.py).
    names: list[str] = field(default_factory=list)
    #: The tool as the reply called it ("browser", "<server>.<tool>") and its method: what
    #: a restored call is made again from.
    call: str = ""
    method: str | None = None
    #: The wait of this process; None for a call restored from disk that nobody awaits yet.
    future: asyncio.Future[Answer] | None = None
    #: An answer given to a restored call before the run went on.
    answer: Answer | None = None

    @property
    def shown(self) -> str:
        """The call as the log's item names it ("tests.add", "browser:open"): the page's
        words for it, where `tool` is the rules' (and the API's) name."""
        if not self.call:
            return self.tool
        return f"{self.call}:{self.method}" if self.method else self.call

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "tool": self.tool, "args": self.args}


class Approvals:
    """One chat's held calls, keyed by the id of the log item that shows each."""

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}
        #: Call names the person allowed for the rest of this chat ("Allow always").
        self.allowed: set[str] = set()

    def hold(self, held: Held) -> asyncio.Future[Answer]:
        """Hold `held` until it is answered: the future of its answer. A restored call
        answered already gets a future that is done."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        before = self._held.get(held.id)
        if before is not None and before.answer is not None:
            future.set_result(before.answer)
        held.future = future
        self._held[held.id] = held
        return future

    def release(self, item_id: str) -> None:
        """The wait for `item_id` is over (answered, timed out or stopped)."""
        self._held.pop(item_id, None)

    def restore(self, held: Held) -> None:
        """A call that was held when the chat was saved, held again (nobody waits yet)."""
        held.future = None
        self._held[held.id] = held

    def decide(self, item_id: str, answer: Answer) -> Held | None:
        """Answer the call held as `item_id`; None when none is held under that id."""
        held = self._held.get(item_id)
        if held is None:
            return None
        if held.future is None:  # restored: kept until the run goes on and asks again
            if held.answer is not None:
                return None
            held.answer = answer
        elif held.future.done():
            return None
        else:
            held.future.set_result(answer)
        if answer.allow and answer.always:
            self.allowed.add(held.tool)
        return held

    def pending(self) -> list[str]:
        """The ids of the calls waiting for an answer."""
        return [held.id for held in self.held()]

    def held(self) -> list[Held]:
        """The calls waiting for an answer, oldest first."""
        return [h for h in self._held.values() if h.answer is None and
                (h.future is None or not h.future.done())]  # fmt: skip

    def allows(self, names: list[str]) -> bool:
        """Whether the person allowed one of `names` for the rest of the chat."""
        return any(name in self.allowed for name in names)
