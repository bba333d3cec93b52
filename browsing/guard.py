"""The outbound policy inside the browser, for what the checking proxy cannot see.

Every connection Chromium opens goes through the checking proxy
(helpers/checking_proxy.py), which checks the address it connects to, redirects and
all. A `file://` request (a page's, a sub-resource's, a download's) never
reaches a proxy: Playwright's routing brings it here, and Chromium never reads
the file it names: the guard gives it the bytes Cadre read under
text_editor's rules (browsing/local_files.py), or refuses. WebSockets are
routed here too, though the proxy would refuse them as well: a refused one is
closed with 1008 ("policy violation"), which a page reads more plainly than a
failed tunnel. A refusal, this guard's or the proxy's, is kept for the agent's
next step. After a navigation the final page's URL is checked too
(browsing/session.py): a refused page is left for about:blank before the agent
reads anything.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from browsing.file_copies import FileCopies
from browsing.local_files import read_file_url
from helpers.outbound import OutboundPolicy, OutboundRefused

if TYPE_CHECKING:
    from playwright.async_api import Request, Route, WebSocketRoute

log = logging.getLogger(__name__)

#: The requests routed through the guard: those of files (a regular expression, matched by
#: Playwright's driver, so no other request waits on Python).
FILE_URLS = re.compile(r"^file:", re.IGNORECASE)
#: Refusals kept for the agent's next step, the rest only counted: a page asking for a refused
#: address in a loop (a thousand times a second) would grow the list without end while the
#: chat waits, and the step's result with it.
REFUSALS_KEPT = 20
PLAIN_TEXT = "text/plain; charset=utf-8"


class RequestGuard:
    """Route handlers: file requests answered here (or refused), WebSockets checked."""

    def __init__(self, policy: Callable[[], OutboundPolicy], copies: FileCopies) -> None:
        self._policy = policy
        #: What a page's parts are read from (browsing/file_copies.py).
        self.copies = copies
        #: Refusals since the last step (the agent hears of them), the first REFUSALS_KEPT.
        self.refused: list[str] = []
        #: Refusals since the last step past those kept.
        self._more = 0

    async def __call__(self, route: Route, request: Request) -> None:
        """A `file://` request (the only kind routed here, FILE_URLS): given what was read
        through the checked descriptor, or refused."""
        try:
            found = await asyncio.to_thread(read_file_url, self._policy(), request.url)
        except OutboundRefused as exc:
            self._refuse(exc)
            if request.is_navigation_request():
                # Answered, as the proxy answers a refused page: an aborted navigation left
                # Chromium committing its error page after the step had ended, which cut
                # the agent's next navigation short ("interrupted by another navigation").
                await route.fulfill(status=403, body=f"{exc}\n", content_type=PLAIN_TEXT)
            else:
                await route.abort("blockedbyclient")
            return
        if request.is_navigation_request():
            await route.fulfill(status=200, body=found.body, content_type=found.content_type)
            return
        # A part of a page: read by Chromium itself, so that its rules for files hold, from a
        # copy of what was checked (browsing/local_files.py says why it is not answered).
        copy = await asyncio.to_thread(self.copies.keep, found.body, request.url)
        await route.continue_(url=copy.as_uri())  # unseen by the page: its URL stays

    async def web_socket(self, route: WebSocketRoute) -> None:
        """The same check for a WebSocket; an allowed one is joined to its server (Playwright
        then passes the messages both ways)."""
        if not await self._allowed(route.url):
            await route.close(code=1008, reason="refused by Cadre's outbound policy")
            return
        route.connect_to_server()

    async def _allowed(self, url: str) -> bool:
        try:
            await asyncio.to_thread(self._policy().check_url, url)  # resolving may block
        except OutboundRefused as exc:
            self._refuse(exc)
            return False
        return True

    def _refuse(self, refusal: OutboundRefused) -> None:
        self.tell(str(refusal))
        log.info("browser request refused: %s", refusal)

    def tell(self, refusal: str) -> None:
        """Keep a refusal (this guard's or the proxy's) for the agent's next step."""
        if len(self.refused) < REFUSALS_KEPT:
            self.refused.append(refusal)
        else:
            self._more += 1

    def take_refused(self) -> list[str]:
        refused, self.refused = self.refused, []
        if self._more:
            refused.append(f"and {self._more} more requests refused")
            self._more = 0
        return refused
