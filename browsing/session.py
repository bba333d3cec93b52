"""A chat's browser: its own context (cookies, tabs) in Cadre's Chromium, kept between steps.

Made empty with the chat; the first step opens the context, later steps reuse
it, and closing the chat (or resetting or deleting it) closes it. Links and
form fields are numbered by `read` (browsing/read_page.js), and `click`,
`type` and `select` take that number, a visible text or a CSS selector.
Downloads are saved in the work folder's `downloads/`; every step leaves a
screenshot in the chat's folder (`browser/shots/`) for the log.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from browsing.file_copies import FileCopies
from browsing.guard import FILE_URLS, RequestGuard
from browsing.host import BrowserHost
from browsing.own_traffic import BrowserPolicy, is_own_request
from helpers.checking_proxy import CheckingProxy
from helpers.errors import RepairableException, RepairableTold
from helpers.outbound import OutboundPolicy, OutboundRefused
from helpers.told import Told, told

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Download, Locator, Page, Request

log = logging.getLogger(__name__)

READ_PAGE = (Path(__file__).parent / "read_page.js").read_text(encoding="utf-8")
TargetKind = Literal["auto", "number", "text", "css"]
#: Most characters `read` returns; a longer page's text is cut (and the long-result rules,
#: core/prompt/long_results.py, then keep the agent's history small).
READ_LIMIT = 200_000
#: Seconds a step waits for a download it started to be saved.
DOWNLOAD_WAIT = 30.0
#: Seconds a step waits for a download to start once its navigation turned into one
#: (Chromium aborts that navigation a moment before it reports the download).
DOWNLOAD_START = 3.0


@dataclass
class Step:
    """What a step left: the page it shows, its screenshot, and what happened on the way."""

    title: str
    url: str
    #: The screenshot's file name in the chat's `browser/shots/` ("" if none could be taken).
    shot: str = ""
    #: The page did not finish loading within the timeout (what loaded is shown).
    cut: bool = False
    downloads: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class ChatBrowser:
    """The browser of one chat (on the agents' loop)."""

    def __init__(self, folder: Path) -> None:
        #: The chat's `browser/` folder (screenshots).
        self.folder = folder
        self._context: BrowserContext | None = None
        self._tabs: list[Page] = []
        self._current = 0
        self._policy = OutboundPolicy()
        self._guard = RequestGuard(lambda: self._policy, FileCopies(folder / "files"))
        #: Where the context's connections go: checked again, redirects and all (and
        #: Chromium's own requests refused, not told: browsing/own_traffic.py).
        self._proxy = CheckingProxy(lambda: BrowserPolicy(inner=self._policy), self._told)
        self._downloads_dir: Path | None = None
        self._saving: set[asyncio.Task[Path | None]] = set()
        #: A navigation was aborted since the last step: perhaps a download is starting.
        self._maybe_download = False
        self._download_started = asyncio.Event()
        self._shots = 0
        #: Held for a whole step: agents of one chat working at once (call_subordinates)
        #: share its tabs, one step after another.
        self.lock = asyncio.Lock()

    def _told(self, refusal: str) -> None:
        """A refusal of the proxy, kept for the agent's next step unless Chromium's own."""
        if not is_own_request(refusal):
            self._guard.tell(refusal)

    @property
    def open(self) -> bool:
        return self._context is not None

    async def start(
        self, host: BrowserHost, executable: str, policy: OutboundPolicy, timeout: float,
        downloads: Path,
    ) -> None:  # fmt: skip
        """Ready for a step: the context opened if it is not, the settings in force now."""
        self._policy = policy
        self._downloads_dir = downloads
        if self._context is None or not host.running:
            self._tabs, self._current = [], 0
            self._guard.copies.clear()  # those a browser that went away left
            self._context = await host.new_context(executable, await self._proxy.start())
            # Network requests are checked by the proxy, once per connection; routing every
            # request through the driver as well cost a third more time on a page of 300
            # images (bench: 2.3 s against 1.9 s) and let a page flood the agents' loop.
            await self._context.route(FILE_URLS, self._guard)
            await self._context.route_web_socket(lambda _url: True, self._guard.web_socket)
            self._context.on("page", self._adopt)
        self._context.set_default_timeout(timeout * 1000)
        self._context.set_default_navigation_timeout(timeout * 1000)
        if not self._tabs:
            self._adopt(await self._context.new_page())

    def _adopt(self, page: Page) -> None:
        """A new tab (the first one, or one a link opened): it becomes the current one."""
        if page in self._tabs:
            return  # the "page" event of a tab `start` opened and adopted already
        self._tabs.append(page)
        self._current = len(self._tabs) - 1
        page.on("download", self._download)
        page.on("requestfailed", self._failed)
        page.on("close", self._forget)

    def _failed(self, request: Request) -> None:
        if request.is_navigation_request() and "ERR_ABORTED" in (request.failure or ""):
            self._maybe_download = True

    def _forget(self, page: Page) -> None:
        if page in self._tabs:
            self._tabs.remove(page)
            self._current = min(self._current, max(0, len(self._tabs) - 1))

    @property
    def page(self) -> Page:
        if not self._tabs:
            raise RepairableTold("fw.browser.no_tab.md")
        return self._tabs[self._current]

    # --- steps -----------------------------------------------------------------

    async def goto(self, url: str) -> Step:
        try:
            await asyncio.to_thread(self._policy.check_url, url)
        except OutboundRefused as exc:
            raise RepairableException(str(exc)) from None
        return await self._navigate(lambda: self.page.goto(url, wait_until="load"))

    async def read(self) -> tuple[str, int]:
        """The page's text as markdown (at most READ_LIMIT characters), and how many more
        characters it has."""
        text = str(await self.page.evaluate(READ_PAGE))
        return text[:READ_LIMIT], max(0, len(text) - READ_LIMIT)

    async def click(self, target: str, by: TargetKind) -> Step:
        locator = await self._locate(target, by)
        return await self._navigate(lambda: locator.click())

    async def type(self, target: str, text: str, by: TargetKind, submit: bool) -> Step:
        locator = await self._locate(target, by)
        await locator.fill(text)
        if not submit:
            return await self.state()
        return await self._navigate(lambda: locator.press("Enter"))

    async def select(self, target: str, option: str, by: TargetKind) -> Step:
        locator = await self._locate(target, by)
        try:
            await locator.select_option(label=option)
        except Exception:  # noqa: BLE001 - no such label: the option's value, else its error
            await locator.select_option(value=option)
        return await self.state()

    async def scroll(self, direction: Literal["down", "up"]) -> Step:
        sign = -1 if direction == "up" else 1
        await self.page.evaluate(f"window.scrollBy(0, {sign} * window.innerHeight * 0.9)")
        return await self.state()

    async def back(self) -> Step:
        return await self._navigate(lambda: self.page.go_back(wait_until="load"))

    async def wait_for(self, text: str) -> Step:
        await self._act(lambda: self.page.get_by_text(text).first.wait_for(state="visible"))
        return await self.state()

    async def tabs(self, action: Literal["list", "switch", "close"], index: int) -> list[Told]:
        """The tabs (told as "1. title - url", the current one marked) after switching or
        closing."""
        if action != "list":
            if not 1 <= index <= len(self._tabs):
                raise RepairableTold("fw.browser.tab_unknown.md", index=index, tabs=len(self._tabs))
            if action == "switch":
                self._current = index - 1
                await self.page.bring_to_front()
            else:
                await self._tabs[index - 1].close()
        return [
            told(
                "fw.browser.tab.md", number=n, title=await tab.title(), url=tab.url,
                current=n - 1 == self._current,
            )
            for n, tab in enumerate(self._tabs, 1)
        ]  # fmt: skip

    async def screenshot(self, full_page: bool) -> Path:
        """A screenshot of the page (PNG), to look at or show; its path."""
        self._shots += 1
        path = self.folder / "shots" / f"page-{self._shots}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=path, full_page=full_page)
        return path

    async def state(self, cut: bool = False) -> Step:
        """The current page: title, URL, a fresh screenshot for the log, what happened."""
        page = self.page
        downloads = await self._saved()
        step = Step(await page.title(), page.url, cut=cut, downloads=downloads)
        step.refused = self._guard.take_refused()
        self._shots += 1
        name = f"step-{self._shots}.jpg"
        target = self.folder / "shots" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            await page.screenshot(path=target, type="jpeg", quality=60, timeout=10_000)
            step.shot = name
        except Exception as exc:  # noqa: BLE001 - a step without a picture is still a step
            log.info("no screenshot of %s: %s", page.url, exc)
        return step

    async def close(self) -> None:
        """Close the chat's context (its tabs with it); the next step opens a fresh one."""
        context, self._context = self._context, None
        self._tabs, self._current = [], 0
        for task in self._saving:
            task.cancel()
        if context is not None:
            try:
                await context.close()
            except Exception:  # noqa: BLE001 - the browser went first: nothing to close
                log.debug("browser context already closed", exc_info=True)
        await self._proxy.close()
        self._guard.copies.clear()

    # --- inner workings --------------------------------------------------------

    async def _navigate(self, action: Callable[[], object]) -> Step:
        """Run a step that may load a page; a load past the timeout is cut, not fatal."""
        cut = await self._act(action, cut_ok=True)
        await self._check_landing()
        return await self.state(cut)

    async def _act(self, action: Callable[[], object], cut_ok: bool = False) -> bool:
        """Run a Playwright call; True if it was cut at the timeout and `cut_ok`."""
        from playwright.async_api import Error, TimeoutError

        try:
            await action()  # type: ignore[misc]
        except TimeoutError as exc:
            if not cut_ok:
                raise RepairableException(_first_line(exc)) from None
            return True
        except Error as exc:
            message = _first_line(exc)
            if "Download is starting" in message:
                return False  # a download, not a page: _saved() waits for it
            refused = self._guard.take_refused()
            raise RepairableException("; ".join(refused) or message) from None
        return False

    async def _check_landing(self) -> None:
        """After redirects: the final page's URL, its host resolved and checked again."""
        page = self.page
        if page.url.startswith(("about:", "data:", "chrome-error:")):
            return
        try:
            await asyncio.to_thread(self._policy.check_url, page.url)
        except OutboundRefused as exc:
            await page.goto("about:blank")
            raise RepairableException(str(exc)) from None

    async def _locate(self, target: str, by: TargetKind) -> Locator:
        page = self.page
        target = target.strip()
        if by == "number" or (by == "auto" and re.fullmatch(r"\[?\d+\]?", target)):
            number = int(target.strip("[]"))
            locator = page.locator(f'[data-cadre-ref="{number}"]')
            if not await locator.count():
                raise RepairableTold("fw.browser.number_unknown.md", number=number)
            return locator.first
        if by in ("auto", "text"):
            locator = page.get_by_text(target, exact=True)
            if not await locator.count():
                locator = page.get_by_text(target)
            if await locator.count() or by == "text":
                if not await locator.count():
                    raise RepairableTold("fw.browser.text_unknown.md", target=repr(target))
                return locator.first
        try:
            locator = page.locator(target)
            found = await locator.count()
        except Exception:  # noqa: BLE001 - not a selector either
            found = 0
        if not found:
            raise RepairableTold("fw.browser.nothing_matches.md", target=repr(target))
        return locator.first

    def _download(self, download: Download) -> None:
        task = asyncio.ensure_future(self._save(download))
        self._saving.add(task)
        self._download_started.set()

    async def _save(self, download: Download) -> Path | None:
        folder = self._downloads_dir
        if folder is None:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        target = _free_name(folder, Path(download.suggested_filename).name or "download")
        await download.save_as(target)
        return target

    async def _saved(self) -> list[Path]:
        """The downloads started since the last step, once saved."""
        if self._maybe_download and not self._saving:
            try:
                await asyncio.wait_for(self._download_started.wait(), DOWNLOAD_START)
            except TimeoutError:
                pass  # an aborted navigation, not a download
        self._maybe_download = False
        self._download_started.clear()
        if not self._saving:
            return []
        tasks, self._saving = self._saving, set()
        done, pending = await asyncio.wait(tasks, timeout=DOWNLOAD_WAIT)
        self._saving |= pending
        return [path for task in done if not task.exception() and (path := task.result())]


def _free_name(folder: Path, name: str) -> Path:
    """`name` in `folder`, numbered ("report (2).pdf") if taken."""
    path = folder / name
    number = 2
    while path.exists():
        path = folder / f"{Path(name).stem} ({number}){Path(name).suffix}"
        number += 1
    return path


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
