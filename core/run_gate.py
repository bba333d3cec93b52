"""The run gate: whether a chat may start a run, whether a run may take its next step, and
whose spending a model call was. The seam the server's per-user limits plug into.

The loop knows no accounts. It asks the gate its runtime holds (`runtime.provide(gate,
RunGate)`; server/run_limits.py provides the one that reads the accounts' limits and keeps
the usage ledger) at three points: the runner before a message, a retry, a resend or a
continue starts a run (never for an intervention into a running chat, nor for a message
that arrived as a run ended: it was taken while the chat ran); the agent before each
model call; and each model call's usage as it is counted. Without a gate (the desktop app
embedded in a program, most tests) nothing is limited and nothing more is counted.

A refusal is `OverLimit` with the gate's words: the caller of a run that did not start
hears them (a 429 over HTTP); a running chat's run ends with them in its log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.errors import OverLimit

if TYPE_CHECKING:
    from core.chat import Chat
    from helpers.runtime import AgentRuntime
    from models.llm import Usage


class RunGate:
    """Lets everything through and counts nothing: the server's gate says otherwise."""

    def start_refusal(self, chat: Chat) -> str:
        """Why `chat` may not start a run now ('' it may). Asked on the agents' loop."""
        return ""

    def new_run_refusal(self, owner: str | None) -> str:
        """Why `owner` may not start a run in a new chat ('' they may): asked before an API
        makes the chat, so that a refused call leaves no empty chat behind."""
        return ""

    def step_refusal(self, chat: Chat) -> str:
        """Why `chat`'s run must stop before its next model call ('' it goes on)."""
        return ""

    def spent(self, chat: Chat, usage: Usage) -> None:
        """One model call of `chat` spent `usage`."""


def gate_of(chat: Chat) -> RunGate | None:
    runtime = chat.runtime
    return runtime.service(RunGate) if runtime is not None else None


def check_start(chat: Chat) -> None:
    """OverLimit with the gate's words when `chat` may not start a run now."""
    gate = gate_of(chat)
    if gate is not None and (why := gate.start_refusal(chat)):
        raise OverLimit(why)


def check_step(chat: Chat) -> None:
    """OverLimit with the gate's words when `chat`'s run must stop before its next step."""
    gate = gate_of(chat)
    if gate is not None and (why := gate.step_refusal(chat)):
        raise OverLimit(why)


def spent(chat: Chat, usage: Usage) -> None:
    gate = gate_of(chat)
    if gate is not None:
        gate.spent(chat, usage)


def check_new_run(runtime: AgentRuntime | None, owner: str | None) -> None:
    """OverLimit with the gate's words when `owner` may not start a run in a new chat."""
    gate = runtime.service(RunGate) if runtime is not None else None
    if gate is not None and (why := gate.new_run_refusal(owner)):
        raise OverLimit(why)
