"""Words on a model call's log item until its first words arrive, so the page never
shows a bare spinner: on a CPU the built-in model takes seconds to load and
tens of seconds to read a long prompt before it writes anything.

The item's `content` says what goes on ("Loading the built-in model…",
"Reading the prompt…", "Writing…") and is cleared when the reply is complete;
the browser shows an item's content already, so no script change is needed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from helpers.local_model import LOCAL

if TYPE_CHECKING:
    from helpers.llm import ModelConfig
    from helpers.log import LogItem

LOADING = "Loading the built-in model…"
READING = "Reading the prompt…"
WRITING = "Writing…"
#: Seconds between two looks at the local model's state while nothing has arrived.
POLL = 0.5


class CallProgress:
    """What one call's log item says about the call, until the reply is complete."""

    def __init__(self, item: LogItem, model: ModelConfig) -> None:
        self.item = item
        self.model = model
        self.shown = ""
        self._show(self._before_first_words())
        self._watch = asyncio.ensure_future(self._watching())

    def _before_first_words(self) -> str:
        if self.model.local is not None and LOCAL.state in ("idle", "loading"):
            return f"{LOCAL.progress}…" if LOCAL.progress else LOADING
        return READING

    async def _watching(self) -> None:
        while True:
            await asyncio.sleep(POLL)
            self._show(self._before_first_words())

    def _show(self, text: str) -> None:
        if text != self.shown:
            self.shown = text
            self.item.update(content=text)

    def writing(self) -> None:
        """The first words arrived."""
        self._stop()
        self._show(WRITING)

    def done(self) -> None:
        """The call ended (complete, cut short or failed): the item shows the reply itself."""
        self._stop()
        self._show("")

    def _stop(self) -> None:
        self._watch.cancel()
