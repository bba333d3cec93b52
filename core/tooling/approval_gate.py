"""The tool policy's gate: every tool call passes it before the tool runs (`Tool.run`).

The rule for the call (helpers/tool_rules.py: the settings' `tool_rules`, the project's
stricter ones, `code_exec_confirm`) decides:

- allow: the call runs;
- deny: it does not; the model reads that a rule refused it (prompts/fw.tool_refused.md);
- ask: the call is held (core/approvals.py) under its log item, which shows its arguments
  and the question; the person allows it (once, for the rest of the chat, or as a saved
  rule) or denies it with a reason the model reads (prompts/fw.tool_denied.md). The held
  call is kept on its agent (`Agent.held`, saved with the chat), so a chat saved while
  it waits comes back with it held (core/tooling/held_call.py goes on with it).

The wait may have a limit (`approval_timeout`): after it the call is denied, or the run
pauses and the call keeps waiting (`approval_timeout_action`; a scheduled task's run
follows `approval_timeout_action_scheduled`, deny by default).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from core.approvals import Answer, Held
from core.events import StateChanged
from core.run_context import agent_of
from helpers import tool_rules
from profiles.projects import load_project_settings

if TYPE_CHECKING:
    from core.tool import Response, Tool

log = logging.getLogger(__name__)


async def check(tool: Tool, args: Any) -> Response | None:
    """None when the call may run; else what the model reads instead of its result."""
    from core.tool import Response  # core.tool imports this module

    if not tool.asks_approval(args):
        return None
    ctx = tool.ctx
    names = tool.rule_names()
    settings = ctx.settings
    rule = tool_rules.decide(settings.tool_rules, names, ctx.profile, ctx.project,
                             settings.code_exec_confirm)  # fmt: skip
    # The project's own rules ask or deny more, never less (profiles/projects.py).
    own = load_project_settings(ctx.project_ref).tool_rules if ctx.project_ref else []
    if own:
        rule = tool_rules.stricter(rule, tool_rules.decide(own, names, ctx.profile, ctx.project))
    if rule == "allow" or (rule == "ask" and ctx.approvals.allows(names)):
        return None
    if rule == "deny":
        log.info("chat %s: %s refused by a tool rule", ctx.chat_id, names[0])
        if tool.log is not None:
            tool.log.update(kvps={"approval": "refused", "approval_tool": tool.full_name})
        return Response(ctx.read_prompt("fw.tool_refused.md", tool_name=names[0]))
    answer = await ask(tool, names)
    if answer.allow:
        return None
    seconds = f"{settings.approval_timeout:g}"
    return Response(ctx.read_prompt("fw.tool_denied.md", tool_name=names[0],
                                    reason=answer.reason.strip(), timed_out=answer.timed_out,
                                    seconds=seconds))  # fmt: skip


async def ask(tool: Tool, names: list[str]) -> Answer:
    """Hold the call until it is answered (or its wait runs out)."""
    ctx = tool.ctx
    assert tool.log is not None  # logged by before_execution
    agent = agent_of(ctx)
    # The arguments as the model wrote them (secrets masked, placeholders kept): what the
    # page and the API show, and what a restored call is made again with.
    held = Held(id=tool.log.id, agent=ctx.name, tool=names[0], args=ctx.mask(dict(tool.args)),
                names=names, call=tool.name, method=tool.method)  # fmt: skip
    stale = agent.held
    if stale is not None and stale.id != held.id:
        # Held before a restart, and made anew rather than gone on with (a workflow's stage
        # runs its own step again): the old hold waits for nothing now.
        ctx.approvals.release(stale.id)
        for item in ctx.log.items:
            if item.id == stale.id and item.kvps.get("approval") == "pending":
                item.update(kvps={"approval": "cancelled"})
    future = ctx.approvals.hold(held)
    agent.held = held  # saved with the agent: a restart finds the call held
    # The page names the call as its item does ("tests.add"), not by its rule's name.
    tool.log.update(kvps={"approval": "pending", "approval_tool": tool.full_name})
    # Saved, and shown in the lists (and a trace notes it, core/tracing/).
    agent.chat.events.emit_soon(StateChanged("approval", ctx, "pending"))
    decision, reason = "cancelled", ""
    try:
        answer = await _wait(tool, future)
        decision = "allowed" if answer.allow else "denied"
        reason = answer.reason
        return answer
    finally:
        ctx.approvals.release(held.id)
        if agent.held is held:
            agent.held = None
        kvps: dict[str, Any] = {"approval": decision}
        if reason:
            kvps["approval_reason"] = reason
        tool.log.update(kvps=kvps)
        agent.chat.events.emit_soon(StateChanged("approval", ctx, decision))


async def _wait(tool: Tool, future: asyncio.Future[Answer]) -> Answer:
    """The answer; after `approval_timeout` seconds a denial, or a pause and the answer."""
    ctx = tool.ctx
    settings = ctx.settings
    limit = settings.approval_timeout
    if not limit or future.done():
        return await future
    try:
        return await asyncio.wait_for(asyncio.shield(future), limit)
    except TimeoutError:
        pass
    chat = agent_of(ctx).chat
    scheduled = chat.task_run is not None
    action = (settings.approval_timeout_action_scheduled if scheduled
              else settings.approval_timeout_action)  # fmt: skip
    seconds = f"{limit:g}"
    if action == "deny":
        log.info("chat %s: %s denied: no answer in %s s", ctx.chat_id, tool.full_name, seconds)
        future.cancel()
        return Answer(False, timed_out=True)
    ctx.log.log("warning", f"{ctx.name}: Paused: nobody answered",
                f"Nobody allowed or denied {tool.full_name} within {seconds} s: the run is "
                "paused. Answer the call, then resume the run.", agentno=ctx.number)  # fmt: skip
    chat.pause()
    return await future
