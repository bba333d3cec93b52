"""`a2a_call`: hand a task to a remote agent over A2A (another Cadre, any A2A server) and
wait for its answer, as `call_subordinate` does with a subordinate.

The remote agents are the `a2a_agents` setting's (helpers/a2a_agents.py); the agent names
one. The wire is helpers/a2a_remote.py. While the remote agent works, each of its status
lines is an `info` item of the chat's log; its answer is the tool's result, marked as text
from outside (it is another agent's, never instructions). The remote context is kept per
agent name on the calling agent (`reset` starts a new one), so a second call continues
the remote conversation; a stopped run cancels the remote task. An unknown name is a
repairable error listing the names; an agent that cannot be reached, refuses the key or
ends without an answer is the call's result, saying what to do (the call's row marked
failed): the reply was right, the world was not.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import AliasChoices, Field

from core.tool import Response, Tool, ToolArgs
from helpers import a2a_remote
from helpers.errors import RepairableException

log = logging.getLogger(__name__)

#: Where the remote contexts are kept in the agent's data: agent name → context id.
CONTEXTS = "a2a_contexts"
#: The prompt file of each kind of fault.
FAULT_PROMPTS = {
    "unreachable": "fw.a2a.unreachable.md",
    "refused": "fw.a2a.key_refused.md",
    "protocol": "fw.a2a.call_failed.md",
}


class A2aCallArgs(ToolArgs):
    agent: str = Field(min_length=1, validation_alias=AliasChoices("agent", "name"),
                       description="The remote agent's name")  # fmt: skip
    message: str = Field(min_length=1, description="The whole task, standing alone")
    reset: bool = Field(False, description="true: a new conversation with that agent")


class A2aCall(Tool):
    """The `a2a_call` tool."""

    Args = A2aCallArgs

    async def execute(self, args: A2aCallArgs) -> Response:
        agents = {agent.name: agent for agent in self.ctx.settings.a2a_agents}
        name = args.agent.strip()
        agent = agents.get(name)
        if agent is None:
            raise RepairableException(self.ctx.read_prompt(
                "fw.a2a.unknown_agent.md", agent=name[:100],
                available=", ".join(sorted(agents)),
            ))  # fmt: skip
        contexts: dict[str, Any] = dict(self.ctx.get_data(CONTEXTS) or {})
        context_id = "" if args.reset else str(contexts.get(name) or "")

        async def step(line: str) -> None:
            self.ctx.log_row("info", f"{name} (A2A): {_line(line)}", line)

        try:
            answer = await a2a_remote.ask(agent, args.message, context_id, step)
        except a2a_remote.RemoteFault as exc:
            # The world's fault, not the reply's: the model reads what to do as the call's
            # result (a repairable error would count towards the unusable replies that stop
            # the run), and the call's row shows it failed. Marked as from the agent's
            # address: the words of a fault may be the remote server's own.
            log.warning("a2a_call to %s failed (%s): %s", name, exc.kind, exc)
            if self.log is not None:
                self.log.update(kvps={"status": "error"})
            text = self.ctx.read_prompt(FAULT_PROMPTS[exc.kind], agent=name, error=str(exc))
            return Response(text, source=agent.url)
        if answer.context_id:
            contexts[name] = answer.context_id
            self.ctx.set_data(CONTEXTS, contexts)
        # Where the text comes from, as history marks it: the agent's address.
        source = agent.url
        if answer.state != "completed":
            text = self.ctx.read_prompt("fw.a2a.ended.md", agent=name, state=answer.state,
                                        error=answer.text or "-")  # fmt: skip
            return Response(text, source=source)
        text = self.ctx.read_prompt("fw.a2a.answer.md", answer=answer.text,
                                    files=", ".join(answer.files))  # fmt: skip
        return Response(text, source=source)


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 120 else flat[:119] + "…"
