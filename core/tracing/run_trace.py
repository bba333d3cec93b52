"""One run's trace: a root span for the run, a span per agent, model call and tool call.

The tree follows the delegation: Agent 0's span is under the run's; a subordinate's (and
each sibling's of a `call_subordinates`) is under the span of the tool call that made it,
a model call's and a tool call's under their agent's. Interventions, approvals, pauses are
span events. Siblings run as asyncio tasks of their own, so nothing here leans on the
"current span" of OpenTelemetry's context: every span is started with its parent given
(the spans are kept by agent), and the events come on the agents' loop, one at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from core.run_context import agent_of
from core.tracing import attributes

if TYPE_CHECKING:
    from core.agent import Agent
    from core.events import (
        IterationEnded,
        ModelCalled,
        MonologueStarted,
        RunEnded,
        StateChanged,
        ToolEnded,
        ToolStarted,
    )
    from core.run_context import RunContext

#: How an iteration ends its agent's loop (see core/events.py `IterationOutcome`).
LOOP_ENDS = {"answer", "stopped", "failed"}


class RunTrace:
    """The spans of one run, open until their step ends (or the run does)."""

    def __init__(self, tracer: Tracer, ctx: RunContext, content: bool) -> None:
        self.tracer = tracer
        self.content = content
        self.mask = ctx.mask
        # An empty context: the run is a trace of its own, whatever span is current.
        self.run = tracer.start_span(
            "cadre.run",
            context=Context(),
            attributes={
                "gen_ai.conversation.id": ctx.chat_id,
                "cadre.chat.id": ctx.chat_id,
                "cadre.agent.first": ctx.name,
                "openinference.span.kind": "CHAIN",
            },
        )
        self.agents: dict[Agent, Span] = {}
        self.tools: dict[Agent, Span] = {}

    def _start(
        self,
        name: str,
        parent: Span,
        found: dict[str, object],
        kind: SpanKind = SpanKind.INTERNAL,
        start_time: int | None = None,
    ) -> Span:
        """A span under `parent`, given explicitly (see the module's docstring)."""
        context = trace.set_span_in_context(parent)
        return self.tracer.start_span(
            name, context=context, kind=kind, attributes=found, start_time=start_time
        )

    def _agent_span(self, agent: Agent) -> Span:
        """The innermost open span of `agent` (its tool call's, else its own, else the run's)."""
        return self.tools.get(agent) or self.agents.get(agent) or self.run

    # -- the steps ---------------------------------------------------------------

    def monologue_started(self, event: MonologueStarted) -> None:
        agent = agent_of(event.ctx)
        if agent in self.agents:  # a loop that never said it ended
            self.agents.pop(agent).end()
        superior = agent.superior
        # Under the call that made it (call_subordinate(s), handoff); a chain resumed
        # after a restart has none open: under the run.
        parent = self._agent_span(superior) if superior is not None else self.run
        found: dict[str, object] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.ctx.name,
            "gen_ai.conversation.id": event.ctx.chat_id,
            "cadre.agent.number": event.ctx.number,
            "cadre.agent.profile": event.ctx.profile or "default",
            "openinference.span.kind": "AGENT",
        }
        if self.content and agent.task:
            found["cadre.agent.task"] = attributes.text(agent.task, self.mask)
        self.agents[agent] = self._start(f"invoke_agent {event.ctx.name}", parent, found)

    def model_called(self, event: ModelCalled) -> None:
        agent = agent_of(event.ctx)
        found = attributes.model_call(event, self.content, self.mask)
        name = f"chat {found['gen_ai.request.model']}"
        span = self._start(name, self.agents.get(agent) or self.run, found,
                           SpanKind.CLIENT, event.started)  # fmt: skip
        if found["cadre.model.outcome"] == "failed":
            span.set_status(Status(StatusCode.ERROR, attributes.text(str(event.error), self.mask)))
        span.end()

    def tool_started(self, event: ToolStarted) -> None:
        agent = agent_of(event.ctx)
        if agent in self.tools:
            self.tools.pop(agent).end()
        found = attributes.tool_call(event.tool_name, event.args, self.mask)
        found["gen_ai.agent.name"] = event.ctx.name
        parent = self.agents.get(agent) or self.run
        self.tools[agent] = self._start(f"execute_tool {event.tool_name}", parent, found)

    def tool_ended(self, event: ToolEnded) -> None:
        span = self.tools.pop(agent_of(event.ctx), None)
        if span is None:
            return
        span.set_attribute("cadre.tool.outcome", "answer" if event.response.break_loop else "done")
        if self.content:
            result = attributes.text(event.response.message, self.mask)
            span.set_attribute("gen_ai.tool.call.result", result)
        span.end()

    def iteration_ended(self, event: IterationEnded) -> None:
        agent = agent_of(event.ctx)
        tool = self.tools.pop(agent, None)
        if tool is not None:  # the tool did not return: refused, cut short, failed
            tool.set_attribute("cadre.tool.outcome", event.outcome)
            if event.outcome in ("rejected", "failed"):
                tool.set_status(Status(StatusCode.ERROR, event.outcome))
            tool.end()
        if event.outcome in LOOP_ENDS and agent in self.agents:
            span = self.agents.pop(agent)
            span.set_attribute("cadre.agent.outcome", event.outcome)
            span.set_attribute("cadre.agent.iterations", event.iteration)
            if event.outcome == "failed":
                span.set_status(Status(StatusCode.ERROR, "the agent's loop failed"))
            span.end()

    def state_changed(self, event: StateChanged) -> None:
        if event.change == "approval" and event.ctx is not None:
            agent = agent_of(event.ctx)
            self._agent_span(agent).add_event(
                "cadre.approval",
                {"cadre.approval.state": event.detail, "gen_ai.agent.name": event.ctx.name},
            )
        elif event.change == "intervention":
            names = [name for name in event.detail.split(",") if name]
            for agent, span in self.agents.items():
                if agent.agent_name in names:
                    span.add_event("cadre.intervention", {"gen_ai.agent.name": agent.agent_name})
            self.run.add_event("cadre.intervention", {"cadre.intervention.to": names})
        elif event.change in ("paused", "resumed"):
            self.run.add_event(f"cadre.{event.change}")

    def end(self, event: RunEnded) -> None:
        """The run has unwound: every span still open ends with it, the run's last."""
        for span in [*self.tools.values(), *self.agents.values()]:
            span.set_attribute("cadre.ended_with_run", True)
            span.end()
        self.tools.clear()
        self.agents.clear()
        outcome = "answer" if event.answer is not None else "failed" if event.error else "stopped"
        self.run.set_attribute("cadre.run.outcome", outcome)
        if event.error is not None:
            error = attributes.text(f"{type(event.error).__name__}: {event.error}", self.mask)
            self.run.set_status(Status(StatusCode.ERROR, error))
            self.run.set_attribute("error.type", type(event.error).__name__)
        elif self.content and event.answer is not None:
            self.run.set_attribute("cadre.run.answer", attributes.text(event.answer, self.mask))
        self.run.end()
