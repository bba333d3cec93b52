"""Showing a reply while it streams, and knowing when it is complete.

The model client hands over each chunk's new text. It is read once: the
scanner follows the JSON object to its end as each chunk comes, and the
partial reader, given what came since it last read, keeps the `headline`,
`thoughts` and, for the `response` tool, its `text` that the log shows.
The intervention check point runs on every chunk, and reading stops at the
end of the first complete JSON object that names a tool, so a model that
rambles on after its answer costs nothing more. While the chat is paused,
chunks are still read (a stalled connection would be dropped by the
provider) but nothing new is shown or acted on.

What is shown reaches disk while the reply streams, at a bounded pace
(helpers/paced_save.py): a reply may take minutes, and a process killed
meanwhile lost all of it, since a chat was saved only around a step. A restart
then finds the answer being written, and marks it cut (core/delegation/resume.py).

All chats share one event loop, so a chunk must cost it little however long
the reply grows: the work per chunk follows the chunk's length, a huge chunk
is read in slices with the loop yielded to between them, and the log (which
copies what it shows) is updated less often as the reply grows.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from core.reply.call_progress import CallProgress
from core.reply.partial_reply import PartialReader
from helpers.errors import ProviderError
from helpers.json_scan import JsonObjectScanner
from helpers.paced_save import PacedSave
from models.llm import MoveNotice

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import LoopData
    from models.llm import CallNotice

#: Seconds between two display updates of a short reply: a person cannot read
#: faster than this anyway.
SHOW_INTERVAL = 0.02
#: An update copies what it shows (into the log, to the browsers): past this
#: many characters the interval grows with the reply, so showing it costs the
#: loop about as much per second however long the reply is.
SHOW_CHARS = 20_000
#: Characters of one chunk read before the loop is yielded to.
SLICE = 16_384
#: Seconds between two updates of the row's `written` count (characters so far), from
#: which the page estimates the tokens of a call still streaming: a tool's arguments are
#: not shown while written, and were not counted until the call ended.
COUNT_INTERVAL = 0.5
#: Most seconds what a reply showed waits to reach disk while it streams: a save of the
#: whole chat per interval at most, as for a command's output (tools/_code_exec.py).
SAVE_INTERVAL = 2.0

GENERATING = "Generating..."
#: Characters of a rejected reply kept on its row for the person to read (a reply cut
#: for its length may be megabytes).
REPLY_SHOWN = 8_000
#: A row's heading once the iteration ended another way than planned, when the reply
#: had no headline of its own to show.
ENDED_HEADINGS = {"rejected": "Reply not usable"}


class ReplyStream:
    """The live view of one model call."""

    def __init__(self, agent: Agent, loop_data: LoopData) -> None:
        self.agent = agent
        self.loop_data = loop_data
        self._pieces: list[str] = []  # the reply, joined only when it is asked for
        self._reasoning: list[str] = []
        self.length = 0  # characters of reply and reasoning taken
        self.scanner = JsonObjectScanner()
        self.reader = PartialReader()
        self._unread: list[str] = []  # what the reader has yet to read
        self._unread_length = 0
        self.offset = 0  # where the current scanner and reader started in the reply
        self.end: int | None = None
        self.shown_at = 0.0
        self.counted_at = 0.0
        #: What `_show` last put on the rows (heading, kvps, the response's text).
        self._shown: dict[str, object] = {}
        self.closed = False
        self.item = agent.chat.log.log(
            "agent", f"{agent.agent_name}: {GENERATING}", agentno=agent.number
        )
        #: The reply's headline has been shown (until then the heading tells the progress).
        self.headed = False
        #: A failed try's line ("retrying in 4 s, attempt 2 of 3") while the next one waits.
        self.retrying = ""
        self.progress = CallProgress(self._progress, agent.config.chat_model)
        #: Saves the chat while the reply streams (see the module doc); `ended` stops it.
        self.saving = PacedSave(agent.progressed, SAVE_INTERVAL)

    @property
    def text(self) -> str:
        """The reply so far."""
        return _joined(self._pieces)

    @property
    def reasoning(self) -> str:
        return _joined(self._reasoning)

    def on_retry(self, notice: CallNotice) -> None:
        """A try failed and another follows, or the call waits for its provider's limit: say
        so on the row while it waits. A move to a fallback model stays on the row, a line of
        its own ("... refused: ...; ... answered")."""
        if isinstance(notice, MoveNotice):
            self.item.update(kvps={"fallback": notice.text})
            if notice.answered:
                return
        if not self.headed:
            self.retrying = notice.text
            heading = f"{self.agent.agent_name}: {notice.text}"
            self.item.update(heading=heading, kvps={"retrying": notice.text})

    def fail(self, exc: ProviderError) -> None:
        """The call failed for good: a row that showed nothing becomes the error
        (`exc.row_id`, see core.failed_step); one that showed some is marked failed."""
        self.progress.done()
        shown = self.item.kvps.keys() - {"retrying", "written", "fallback"}
        shown = shown or self.loop_data.response_log is not None
        if not self.headed and not shown:
            self.closed = True
            exc.row_id = self.item.id
        else:
            self.close("failed")

    async def on_chunk(self, text: str, reasoning: str) -> bool:
        """Called by the model client with each chunk's new text; True stops the stream."""
        if self.retrying:
            self.retrying = ""  # a retry came through: its line is over
            self.item.update(kvps={"retrying": ""})
        if not self._pieces:
            self.progress.writing()
        if reasoning:
            self._reasoning.append(reasoning)
        self._pieces.append(text)
        self.length += len(text) + len(reasoning)
        for start in range(0, len(text), SLICE):
            if start:
                await asyncio.sleep(0)
            self._read(text[start : start + SLICE])
            if self._unread_length >= SLICE:  # never much to read at once
                self._catch_up()
        agent = self.agent
        if agent.chat.paused:
            return False
        now = time.monotonic()
        interval = SHOW_INTERVAL * max(1.0, self.length / SHOW_CHARS)
        if now - self.shown_at >= interval or self.end is not None:
            self.shown_at = now
            if self._show(self.reasoning):
                self.saving.changed()
        # Joining the reply costs its length: only when there is an intervention to take.
        if agent.intervention is not None or agent.nudged:
            await agent.handle_intervention(self.text)
        return self.end is not None

    def _read(self, text: str) -> None:
        """Read new reply text; note where the first object that names a tool ends."""
        while text and self.end is None:
            before = self.scanner.length
            end = self.scanner.feed(text)
            if end is None:
                self._keep(text)
                return
            used = end - before  # the part of `text` up to the object's end
            if "tool" in self.scanner.text[self.scanner.start : end]:
                self._keep(text[:used])
                self.end = self.offset + end
                return
            # Braces in prose ("I'll fill in {name}"): not the reply; read on.
            self.offset += end
            self.scanner, self.reader = JsonObjectScanner(), PartialReader()
            self._unread, self._unread_length = [], 0
            text = text[used:]

    def _keep(self, text: str) -> None:
        """Leave `text` for the partial reader, which reads when the reply is shown."""
        self._unread.append(text)
        self._unread_length += len(text)

    def _catch_up(self) -> None:
        if self._unread:
            self.reader.feed("".join(self._unread))
            self._unread, self._unread_length = [], 0

    def _progress(self, text: str) -> None:
        # A retry's line, the reply's headline or the row's end outrank the progress words.
        if not (self.headed or self.retrying or self.closed):
            self.item.update(heading=f"{self.agent.agent_name}: {text or GENERATING}")

    def _show(self, reasoning: str) -> bool:
        """Show the reply so far on its rows; True if that changed them."""
        self._catch_up()
        changed = False
        partial = self.reader.snapshot()
        agent = self.agent
        heading = self.item.heading
        if partial.headline:
            heading = f"{agent.agent_name}: {partial.headline}"
            self.headed = True
        kvps: dict[str, object] = {}
        if partial.thoughts:
            kvps["thoughts"] = partial.thoughts
        if reasoning:
            kvps["reasoning"] = reasoning
        if partial.tool_name:
            kvps["tool_name"] = partial.tool_name
        now = time.monotonic()
        if now - self.counted_at >= COUNT_INTERVAL:
            self.counted_at = now
            kvps["written"] = self.length
        # Only what changed since the row was last shown: each update cleans, masks and
        # pushes what it is given, and most chunks change one field or none.
        shown = self._shown
        kvps = {key: value for key, value in kvps.items() if shown.get(key) != value}
        if heading != shown.get("heading") or kvps:
            shown.update(kvps, heading=heading)
            self.item.update(heading=heading, kvps=kvps)
            changed = True
        if partial.tool_name == "response" and partial.text is not None:
            if self.loop_data.response_log is None:
                self.loop_data.response_log = agent.chat.log.log(
                    "response", f"{agent.agent_name}: Responding", agentno=agent.number
                )
            if partial.text != shown.get("response"):
                shown["response"] = partial.text
                self.loop_data.response_log.update(content=partial.text)
                changed = True
        return changed

    def finish(self, text: str, reasoning: str) -> str:
        """The reply as it counts: cut after the first complete object that names a tool."""
        taken = len(self.text)
        if len(text) > taken:  # what the client still held after the last chunk
            self._pieces.append(text[taken:])
            self._read(text[taken:])
        reply = text[: self.end] if self.end is not None else text
        self.progress.done()
        self._show(reasoning)
        if not self.headed:
            self.item.update(heading=f"{self.agent.agent_name}: (no usable reply)")
        return reply

    async def ended(self) -> None:
        """The call is over, however it ended: its progress words go, and no paced save
        follows (the iteration's end saves the chat); a save being written finishes."""
        self.progress.done()
        await self.saving.close()

    def close(self, why: str) -> None:
        """The iteration ended without its tool completing: say so on what it showed.

        The first reason given is the one shown (a reply ended for its length is
        then also rejected: it stays "too long")."""
        if self.closed:
            return
        self.closed = True
        self.progress.done()
        if not self.headed:
            said = ENDED_HEADINGS.get(why, why.capitalize())
            self.item.update(heading=f"{self.agent.agent_name}: {said}")
        self.item.update(kvps={"status": why})
        if self.loop_data.response_log is not None:
            self.loop_data.response_log.update(kvps={"status": why})

    def rejected(self, reason: str) -> None:
        """The reply was not used: its row keeps why and what the model sent, so each
        unusable reply of a series shows its own (the page folds the text)."""
        self.close("rejected")
        text = self.text
        if len(text) > REPLY_SHOWN:
            text = f"{text[:REPLY_SHOWN]}… ({len(text) - REPLY_SHOWN:,} more characters)"
        self.item.update(kvps={"reason": reason, "reply": text})


def _joined(pieces: list[str]) -> str:
    """The pieces as one string, kept as one piece so the next join copies less."""
    if len(pieces) > 1:
        pieces[:] = ["".join(pieces)]
    return pieces[0] if pieces else ""
