"""`handoff`: Agent 0 passes the conversation with the user to another profile.

Agent 0 is reconfigured, not replaced: its history goes on as it is under the
new profile's system prompt, so the new profile sees the conversation so far
and answers the user from this step on, in this run and the next, until it
hands the conversation on or back (a handoff to the chat's own profile,
`agent0` unless the chat began with another). Only the agent talking with the
user may hand off. The profiles it may hand to are those it may call
(`call_subordinate`'s rule, catalog.allowed_subordinates), plus the way back.
Who talks is saved with the chat (Agent 0's profile and
`Chat.home_profile`), so a handoff survives a restart.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, Field, field_validator

from core.agent_config import chat_agent_config
from core.delegation.steps import subordinate_profile_labels
from core.run_context import agent_of
from core.tool import Response, Tool, ToolArgs
from helpers.errors import RepairableException
from profiles import catalog

if TYPE_CHECKING:
    from core.agent import Agent
    from core.log import LogItem


class HandoffArgs(ToolArgs):
    profile: str = Field(
        min_length=1, validation_alias=AliasChoices("profile", "agent_profile"),
        description="The profile that talks with the user from now on.",
    )  # fmt: skip
    #: What the new profile should know or do first.
    message: str = ""

    @field_validator("profile", mode="before")
    @classmethod
    def _stripped(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value


def home_profile(agent: Agent) -> str:
    """The chat's own profile for Agent 0: the one it began with, before any handoff."""
    return agent.chat.home_profile or agent.config.profile


def handoff_targets(agent: Agent) -> dict[str, str]:
    """Profile → title of every profile `agent` may hand the conversation to now."""
    targets = dict(subordinate_profile_labels(agent))
    home = home_profile(agent)
    if home != agent.config.profile:
        found = catalog.discover_profiles(agent.chat.project_ref).get(home)
        targets[home] = found.title if found is not None else home
    targets.pop(agent.config.profile, None)
    return targets


class Handoff(Tool):
    """The `handoff` tool: another profile talks with the user from now on."""

    Args = HandoffArgs
    #: The hand-over text is for the model; `_announce` tells the user in plain words.
    result_in_log = False

    async def execute(self, args: HandoffArgs) -> Response:
        agent = agent_of(self.ctx)
        context = agent.chat
        if agent is not context.agent0:
            raise RepairableException(agent.read_prompt("fw.handoff.not_talking.md"))
        before, home = agent.config.profile, home_profile(agent)
        targets = handoff_targets(agent)
        if args.profile == before:
            raise RepairableException(agent.read_prompt("fw.handoff.same.md", profile=before))
        if args.profile not in targets:
            available = ", ".join(f"{key} ({title})" for key, title in sorted(targets.items()))
            raise RepairableException(
                agent.read_prompt(
                    "fw.handoff.not_allowed.md",
                    profile=args.profile,
                    available=available or "none",
                )
            )
        back = args.profile == home
        overrides = agent.config.overrides
        config = chat_agent_config(
            overrides, args.profile, context.project, handed=not back, owner=context.owner
        )
        # Through the same model seam (a program's own, a replay's).
        config = dataclasses.replace(config, model_for=agent.config.model_for)
        # Between two steps of Agent 0's loop: its next step is the new profile's.
        context.config = config
        agent.reconfigure(config)
        context.home_profile = None if back else home
        title = targets[args.profile]
        self._announce(before, args.profile, title, args.message, back)
        text = agent.read_prompt(
            "fw.handoff.done.md",
            profile=args.profile,
            title=title,
            previous=before,
            message=args.message,
        )
        return Response(message=text, break_loop=False)

    def _announce(self, before: str, profile: str, title: str, note: str, back: bool) -> None:
        """The hand-over in the log, in plain words for the user."""
        heading = f"{title} talks with you again" if back else f"{title} talks with you now"
        found = catalog.discover_profiles(self.ctx.project_ref).get(before)
        giver = found.title if found is not None else before
        content = f"{giver} handed the conversation to {title} ({profile})."
        if note:
            content += f"\n\nHanded over with: {note}"
        self.ctx.log.log(
            "info",
            heading,
            content,
            # The title names the new speaker on Agent 0's later items (log-view.js).
            kvps={"handoff": profile, "from": before, "title": title, "back": back},
            agentno=self.ctx.number,
        )

    def get_log_object(self) -> LogItem:
        return self.ctx.log_row("tool", "Handing the conversation over", kvps=self.args)
