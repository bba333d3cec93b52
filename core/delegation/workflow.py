"""A workflow profile's agent at work: its declared stages run instead of a model's loop.

An agent whose profile declares a workflow (profiles/workflow.py) calls no
model: `Agent.monologue` runs the workflow here. Each stage is a real
delegation made with the delegation tools themselves (`call_subordinate` for
one step, `call_subordinates` for the parallel steps, core/delegation's typed
tools), so the checks, budgets, log items, history and saving are theirs.
Each stage's answer is kept in the agent's data (saved with it), so a restart
goes on at the stage that was working: core/delegation/resume.py finishes that stage's
step agents and leaves their handovers (`Agent.handed`) for the workflow to
take here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from core.delegation import parallel
from core.delegation.call_many import CallSubordinates
from core.delegation.call_one import CallSubordinate
from core.tooling import tool_call
from helpers.errors import RepairableException, RunError
from profiles.catalog import profile_workflow

if TYPE_CHECKING:
    from core.agent import Agent
    from profiles.workflow import Workflow

#: The key of the workflow's progress in its agent's data.
STATE = "workflow"
ONE, SEVERAL = "call_subordinate", "call_subordinates"
#: The delegation tools a stage runs as, by type (a profile's own copy of them is not used).
STAGE_TOOLS: dict[str, type[CallSubordinate | CallSubordinates]] = {
    ONE: CallSubordinate,
    SEVERAL: CallSubordinates,
}


def declared(agent: Agent) -> Workflow | None:
    """The workflow `agent`'s profile declares, if any. A workflow works on a task its
    agent was given: Agent 0 (no task; it talks with the user) runs its loop as ever."""
    if agent.task is None:
        return None
    return profile_workflow(agent.config.profile, agent.chat.project_ref)


async def work(agent: Agent, loop: Callable[[], Awaitable[str]]) -> str:
    """`agent`'s answer: its workflow's, if its profile declares one, else its `loop`'s."""
    flow = declared(agent)
    return await (loop() if flow is None else run(agent, flow))


async def run(agent: Agent, flow: Workflow) -> str:
    """Run `flow`'s stages on `agent`'s task, from the first one not done; the answer of
    the last stage. A stage that fails ends the workflow (RunError) with its report."""
    task = agent.task or ""
    state = agent.get_data(STATE) or {}
    # Progress of another task (a workflow stopped, then a new task) counts for nothing.
    answers: list[str] = list(state.get("answers", [])) if state.get("task") == task else []
    stages = _stages(flow)
    while len(answers) < len(stages):
        done = len(answers)
        resumed = state.get("task") == task and state.get("started") == done
        if resumed and agent.subordinates and all(s.handed for s in agent.subordinates):
            text = _take_handovers(agent)  # finished after a restart (core/delegation/resume.py)
        else:
            agent.set_data(STATE, {"task": task, "started": done, "answers": answers})
            text = await _run_stage(agent, stages[done], _message(agent, flow, answers))
        answers.append(text)
        state = {"task": task, "started": done + 1, "answers": answers}
        agent.set_data(STATE, state)
        await agent.progressed()  # this stage's answer is on disk before the next starts
    agent.data.pop(STATE, None)
    return answers[-1]


def _stages(flow: Workflow) -> list[tuple[str, ...]]:
    if flow.kind == "sequential":
        return [(step,) for step in flow.steps]
    return [flow.steps, (flow.aggregate,)]


def _message(agent: Agent, flow: Workflow, answers: list[str]) -> str:
    """What the next stage is given: the task first, then the answer(s) before it."""
    task = agent.task or ""
    if not answers:
        return task
    if flow.kind == "sequential":
        previous = flow.steps[len(answers) - 1]
        return agent.read_prompt(
            "fw.workflow.next_step.md", task=task, previous=previous, answer=answers[-1]
        )
    return agent.read_prompt("fw.workflow.aggregate.md", task=task, answers=answers[-1])


async def _run_stage(agent: Agent, profiles: tuple[str, ...], message: str) -> str:
    """One stage as the delegation tool call a model would make; its result."""
    args: dict[str, Any]
    if len(profiles) == 1:
        name, args = ONE, {"message": message, "profile": profiles[0], "reset": True}
    else:
        name = SEVERAL
        args = {"tasks": [{"message": message, "profile": p} for p in profiles]}
    tool = STAGE_TOOLS[name](agent.ctx, name, None, args, "", None)
    try:
        response = await tool_call.run_tool(agent, tool)
    except RepairableException as exc:
        # No model to repair the call: the workflow's superior hears why it stopped.
        raise RunError(str(exc)) from exc
    return response.message


def _take_handovers(agent: Agent) -> str:
    """The answer of the stage whose step agents finished after a restart, recorded in
    history as the stage's tool would have."""
    steps = agent.subordinates
    handovers = [s.handed for s in steps if s.handed is not None]
    if len(steps) > 1:
        batch = parallel.batch_result(agent, handovers)  # consumes the siblings' handovers
        agent.add_tool_result(SEVERAL, batch.text, hint=batch.hint)
        return batch.text
    steps[0].handed = None
    (handed,) = handovers
    if handed.failed:
        raise RunError(handed.text)
    agent.add_tool_result(ONE, handed.text, hint=handed.hint)
    return handed.text
