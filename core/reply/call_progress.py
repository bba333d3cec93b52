"""Words on a model call's log row until its headline arrives, so the page never shows
a bare spinner: on a CPU the built-in model takes seconds to load and tens of
seconds to read a long prompt before it writes anything.

The row's heading says what goes on ("A0: Loading the built-in model…", "A0:
Reading the prompt…", "A0: Writing…") until the reply's own headline takes its
place; the browser shows a row's heading already, so no script change is needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from models.local_model import LOCAL

if TYPE_CHECKING:
    from models.llm import ModelConfig

LOADING = "Loading the built-in model…"
READING = "Reading the prompt…"
WRITING = "Writing…"
#: Seconds between two looks at the local model's state while nothing has arrived.
POLL = 0.5


class CallProgress:
    """What one call is doing, told to `show` whenever it changes ("" once it ended)."""

    def __init__(self, show: Callable[[str], None], model: ModelConfig) -> None:
        self.show = show
        self.model = model
        self.shown = ""
        self._say(self._before_first_words())
        self._watch = asyncio.ensure_future(self._watching())

    def _before_first_words(self) -> str:
        if self.model.local is not None and LOCAL.state in ("idle", "loading"):
            return f"{LOCAL.progress}…" if LOCAL.progress else LOADING
        return READING

    async def _watching(self) -> None:
        while True:
            await asyncio.sleep(POLL)
            self._say(self._before_first_words())

    def _say(self, text: str) -> None:
        if text != self.shown:
            self.shown = text
            self.show(text)

    def writing(self) -> None:
        """The first words arrived."""
        self._watch.cancel()
        self._say(WRITING)

    def done(self) -> None:
        """The call ended (complete, cut short or failed)."""
        self._watch.cancel()
        self._say("")
