"""A replay under way: the model every agent of the replay chat is given, and the recorded
results its tools give instead of running (with `tools: recorded`).

`Replay.model_for` is the replay chat's model seam (`AgentConfig.model_for`; a subordinate
takes its superior's, core/delegation/steps.py). Each streamed call, the loop's call of
its chat model, is answered by the calling agent's next recorded reply: the agent is the
one whose loop makes the call (`core.log.SPEAKER`), so each subordinate and sibling
replays its own replies, in order. Before it answers, the result the agent's last step
got this time is compared with the recorded one (core/replay/compare.py); at the first
difference, or where the record holds no reply, the replay says so in the log and stops
the run (`on_difference: stop`) or calls the model from there on (`live`). Utility and
embedding calls are not recorded: they are made as usual (a replay chat is named at once,
so a plain chat makes none).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
from typing import TYPE_CHECKING, Any, Literal

from core.log import SPEAKER
from core.replay.compare import Difference, same
from core.replay.record import Recording, following
from helpers import folders
from models.llm import ModelConfig, ModelReply, Usage
from models.model import Model, for_config

if TYPE_CHECKING:
    from core.agent import Agent
    from core.chat import Chat
    from core.tool import Response, Tool

log = logging.getLogger(__name__)

Tools = Literal["rerun", "recorded"]
OnDifference = Literal["stop", "live"]
#: replaying: on record; followed: to the end on record; stopped: at a difference;
#: live: the model called again from a difference on.
State = Literal["replaying", "followed", "stopped", "live"]

#: Tools that are never given a recorded result: `response` ends the loop, and a
#: delegation runs its subordinates, who replay their own records.
RUN_ALWAYS = frozenset({"response", "call_subordinate", "call_subordinates", "handoff"})


class Replay:
    """One replay of a recorded chat into a new chat."""

    def __init__(self, recording: Recording, tools: Tools, on_difference: OnDifference) -> None:
        self.recording = recording
        self.tools: Tools = tools
        self.on_difference: OnDifference = on_difference
        #: The replay chat (set once it is made).
        self.chat: Chat | None = None
        self.state: State = "replaying"
        #: True once every recorded message was fed: later calls are live ones.
        self.ended = False
        self.difference: Difference | None = None
        #: Model calls answered from the record so far.
        self.replies = 0
        self._next: dict[str, int] = {}

    @property
    def marking(self) -> dict[str, str]:
        """What the replay chat saves of its origin (`Chat.replay_of`)."""
        return {"id": self.recording.chat_id, "tools": self.tools,
                "on_difference": self.on_difference}  # fmt: skip

    def attach(self, chat: Chat) -> None:
        """Make `chat` (new, on the agents' loop) this replay's: marked, its model seam ours."""
        self.chat = chat
        chat.replay = self
        chat.replay_of = self.marking
        seam = dataclasses.replace(chat.config, model_for=self.model_for)
        chat.config = seam  # kept by a settings change (`Chat.reconfigure`)
        chat.agent0.reconfigure(seam)

    def model_for(self, config: ModelConfig) -> Model:
        """The replay chat's model seam: every model, answered from the record while on it."""
        return ReplayModel(self, for_config(config))

    @property
    def on_record(self) -> bool:
        return self.state == "replaying" and not self.ended

    def end(self) -> State:
        """Every recorded message was fed (or the replay stopped): the outcome."""
        self.ended = True
        if self.state == "replaying":
            self.state = "followed"
        return self.state

    # -- the model's replies ----------------------------------------------------

    async def reply(self, live: Model, call: dict[str, Any]) -> ModelReply:
        """The calling agent's next recorded reply (or, off the record, `live`'s)."""
        if not self.on_record or self.chat is None:
            return await live.stream(**call)
        name = SPEAKER.get()[1]
        steps = self.recording.steps.get(name, [])
        done = self._next.get(name, 0)
        agent = self._agent(name)
        if self.tools == "rerun" and done and agent is not None:
            recorded = steps[done - 1]
            now = "\n\n".join(text for text, _ in _last_step_after(agent))
            ids = (self.recording.chat_id, self.chat.id)
            if not same(recorded.result, now, ids):
                diff = Difference(name, done, recorded.tool, recorded.result, now)
                return await self._left_record(diff, live, call)
        if done >= len(steps):
            return await self._left_record(Difference(name, done + 1, "", "", "", True), live,
                                           call)  # fmt: skip
        self._next[name] = done + 1
        self.replies += 1
        text = steps[done].reply
        on_chunk = call.get("on_chunk")
        if on_chunk is not None:
            await on_chunk(text, "")  # shown as it would have streamed, all at once
        return ModelReply(text=text, reasoning="", usage=Usage())

    async def _left_record(self, diff: Difference, live: Model,
                           call: dict[str, Any]) -> ModelReply:  # fmt: skip
        assert self.chat is not None
        self.difference = diff
        heading = "Replay: no recorded reply" if diff.ran_out else "Replay: a result differs"
        kvps = {"replay": "difference", "step": diff.step, "tool": diff.tool}
        self.chat.log.log("warning", heading, diff.words(), kvps=kvps, agentno=_number(diff))
        log.info("chat %s: replay left its record at %s step %d", self.chat.id, diff.agent,
                 diff.step)  # fmt: skip
        if self.on_difference == "live":
            self.state = "live"
            self.chat.log.log("info", "Replay goes on live",
                              "From here on the model is called again, as in any chat.",
                              agentno=_number(diff))  # fmt: skip
            return await live.stream(**call)
        self.state = "stopped"
        self.chat.runner.stop()  # as the Stop button: the whole chain, this call with it
        await asyncio.Event().wait()
        raise AssertionError("unreachable: the stop cancels the wait")

    def _agent(self, name: str) -> Agent | None:
        assert self.chat is not None
        for agent in (*self.chat.busy, *self.chat.agents()):
            if agent.agent_name == name:
                return agent
        return None

    # -- the tools' results -----------------------------------------------------

    def recorded_result(self, agent: Agent, tool: Tool) -> Response | None:
        """With `tools: recorded`, the result `tool` got in the record (put into history as
        it was), instead of running it; None when the tool runs (see `RUN_ALWAYS`)."""
        from core.tool import Response  # core.tool names this module's hook

        if self.tools != "recorded" or not self.on_record or tool.name in RUN_ALWAYS:
            return None
        done = self._next.get(agent.agent_name, 0)
        if not done:
            return None
        step = self.recording.steps[agent.agent_name][done - 1]
        for text, file in step.after:
            if file:
                self._copy_saved(file)
            agent.history.add_message(ai=False, content=text, file=file)
        shown = step.result
        if shown.startswith("[Result of tool"):
            shown = shown.split("\n", 1)[-1]
        if tool.log is not None:
            tool.log.update(content=shown, kvps={"replay": "recorded result"})
        return Response(message=shown, break_loop=False)

    def _copy_saved(self, file: str) -> None:
        """A long result's saved file, into the replay chat's folder (§§include finds it)."""
        assert self.chat is not None
        source = folders.chat_dir(self.recording.chat_id) / file
        target = folders.chat_dir(self.chat.id) / file
        if source.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def _last_step_after(agent: Agent) -> list[tuple[str, str | None]]:
    """What came back after the agent's last reply in its history now."""
    history = agent.history
    messages = [m.to_dict() for t in (*history.topics, history.current) for m in t.messages]
    last = max((i for i, m in enumerate(messages) if m["ai"]), default=-1)
    return following(messages[last + 1 :]) if last >= 0 else []


def _number(diff: Difference) -> int:
    return int(diff.agent[1:].split(".")[0]) if diff.agent[1:2].isdigit() else 0


class ReplayModel:
    """A model of the replay chat (the `Model` protocol): streamed calls replayed, the rest
    (utility, embeddings, token counts) the live model's."""

    name = "replay"

    def __init__(self, replay: Replay, live: Model) -> None:
        self.replay = replay
        self.live = live
        self.config = live.config

    async def stream(
        self,
        messages: list[dict[str, Any]],
        on_chunk: Any = None,
        on_usage: Any = None,
        schema: dict[str, Any] | None = None,
        on_retry: Any = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        call = {"messages": messages, "on_chunk": on_chunk, "on_usage": on_usage,
                "schema": schema, "on_retry": on_retry, "max_tokens": max_tokens}  # fmt: skip
        return await self.replay.reply(self.live, call)

    async def complete(self, messages: list[dict[str, Any]], on_usage: Any = None,
                       schema: dict[str, Any] | None = None,
                       max_tokens: int | None = None) -> ModelReply:  # fmt: skip
        return await self.live.complete(messages, on_usage, schema, max_tokens)

    async def embed(self, texts: list[str], on_usage: Any = None) -> list[list[float]]:
        return await self.live.embed(texts, on_usage)

    def count_tokens(self, text: str) -> int:
        return self.live.count_tokens(text)
