"""The one Chromium process of Cadre, started on first use and ended with the runtime.

`shared_host(runtime)` is the runtime's one `BrowserHost`, made and held there on
first use (helpers/runtime.py, `provide`) and closed first thing when the runtime
stops, so no browser process outlives Cadre.

Playwright's async API runs on the agents' own loop (helpers/runtime.py): its
work is waiting on the driver process, which the loop does without blocking
anyone, a stopped or nudged step is cancelled like any other awaited call, and
no second loop or thread has to hand results back and forth. Each chat gets its
own browser context (cookies, tabs) in this one process, so three chats cost
three contexts, not three browsers.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.errors import UserError
from helpers.programs import check_program
from helpers.runtime import AgentRuntime

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

log = logging.getLogger(__name__)

#: Debian's Chromium (apt install chromium), the browser tried first.
DEBIAN_CHROMIUM = "/usr/bin/chromium"
#: The page size agents see (and screenshots have).
VIEWPORT = {"width": 1280, "height": 800}
#: Chromium's own traffic (updates, sync, QUIC) would go past the outbound policy: off. So
#: would a page's WebRTC UDP (to a STUN or TURN server the page names), which no HTTP proxy
#: carries: only what can go through the checking proxy (helpers/checking_proxy.py) is sent.
ARGS = [
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic", "--disable-gpu",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
]  # fmt: skip


def find_executable(setting: str) -> str | None:
    """The Chromium to run: the setting, else Debian's; None: Playwright's own."""
    if setting:
        found = shutil.which(setting) or (setting if Path(setting).is_file() else None)
        if found is None:
            raise UserError(
                f"the browser program {setting!r} (setting browser_executable) was not found; "
                "install Chromium (Debian: apt install chromium) or fix the setting"
            )
        return found
    return DEBIAN_CHROMIUM if Path(DEBIAN_CHROMIUM).is_file() else None


class BrowserHost:
    """Playwright and its Chromium, shared by every chat on the agents' loop."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def new_context(self, executable_setting: str, proxy: str) -> BrowserContext:
        """A fresh context (own cookies, own tabs) whose every connection goes through
        `proxy` (helpers/checking_proxy.py), starting Chromium if needed."""
        async with self._lock:
            if not self.running:
                await self._launch(executable_setting)
            assert self._browser is not None
            return await self._browser.new_context(
                viewport=VIEWPORT,
                accept_downloads=True,
                service_workers="block",
                proxy={"server": proxy},  # Playwright sends loopback through it too
            )  # service workers would fetch past the outbound guard (browsing/guard.py)

    async def _launch(self, executable_setting: str) -> None:
        from playwright.async_api import Error, async_playwright

        executable = find_executable(executable_setting)
        if executable:  # the host starts it: never a program an agent could have written
            await asyncio.to_thread(check_program, executable, "browser_executable")
        await self.close()
        self._playwright = await async_playwright().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=executable, headless=True, args=ARGS
            )
        except Error as exc:
            await self.close()
            if executable is None and "Executable doesn't exist" in str(exc):
                raise UserError(
                    "no Chromium found for the browser tool: install it (Debian: apt install "
                    "chromium; else: python -m playwright install chromium) or set "
                    "browser_executable"
                ) from None
            raise UserError(f"the browser could not start: {str(exc).splitlines()[0]}") from None
        log.info("browser started: %s", executable or "Playwright's Chromium")

    async def close(self) -> None:
        """End Chromium and the Playwright driver (their processes with them)."""
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        if browser is not None:
            try:
                await browser.close()
            except Exception:  # noqa: BLE001 - already gone: nothing left to end
                log.debug("browser already closed", exc_info=True)
        if playwright is not None:
            await playwright.stop()


def shared_host(runtime: AgentRuntime) -> BrowserHost:
    """The browser every chat on `runtime` shares: made on first use, closed when it stops."""
    host = runtime.service(BrowserHost)
    if host is None:
        host = runtime.provide(BrowserHost())
        runtime.close_first("the browser", host.close)
    return host
