"""A subordinate's handover: its answer, or the report of its failure, reaches its superior.

One path for both ways a delegation ends: live, `call_subordinate` runs the
subordinate and returns what it hands over as its tool result; after a
restore, the runner (core/runner.py) runs the subordinate that was working
and gives its superior the same, as that tool's result would have been.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core import failed_step
from core.prompt.long_results import LEN_MIN
from core.reply import repair
from helpers.errors import RepairableException, RunError, UserError

if TYPE_CHECKING:
    from core.agent import Agent


@dataclass(frozen=True)
class Handover:
    """What a subordinate hands its superior: its answer, or the report of its failure."""

    text: str
    #: Framework advice shown with a long answer (cite it with `§§include`).
    hint: str = ""
    failed: bool = False


async def run_subordinate(
    superior: Agent, subordinate: Agent, work: Callable[[], Awaitable[str]] | None = None
) -> Handover:
    """Run `subordinate` on the task in its history; what goes back to `superior`.

    `work` is how its answer comes (default: its `monologue`); a resume first
    finishes the work it had delegated itself (core/delegation/resume.py).

    The one path of a delegation's end, live (`call_subordinate`) or after a
    restore: a failure the subordinate cannot recover from is shown in the log
    and reported to the superior, which decides what to do; work returns to
    the superior, and an intervention the subordinate never read goes up with it.
    """
    context = superior.chat
    try:
        answer = await (work or subordinate.monologue)()
    except (RunError, UserError) as exc:
        heading = f"{subordinate.agent_name}: Stopped"
        failed_step.show_failure(context.log, exc, subordinate.number, heading)
        report = superior.read_prompt(
            "fw.call_sub.failed.md", subordinate=subordinate.agent_name, error=str(exc)
        )
        return Handover(report, failed=True)
    finally:
        context.working_agent = superior
        _hand_up_intervention(subordinate, superior)
    subordinate.history.new_topic()
    hint = superior.read_prompt("fw.hint.call_sub.md") if len(answer) >= LEN_MIN else ""
    return Handover(answer, hint)


def _hand_up_intervention(subordinate: Agent, superior: Agent) -> None:
    if subordinate.intervention is not None and superior.intervention is None:
        superior.intervention = subordinate.intervention
        superior.wake.set()
    subordinate.intervention = None


def deliver_restored(superior: Agent, handover: Handover) -> None:
    """Give `superior` what its subordinate handed up after a restore, as the live
    `call_subordinate` would have: the tool's result, or its failure as a problem to fix."""
    if handover.failed:
        repair.handle_repairable(superior, RepairableException(handover.text))
    else:
        superior.add_tool_result("call_subordinate", handover.text, hint=handover.hint)
