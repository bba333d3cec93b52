"""The `browser` tool: open pages, read them, click, type, select, scroll, tabs, screenshots.

Each chat has its own browser context (browsing/session.py) in Cadre's one
Chromium (browsing/host.py), so its tabs survive between steps. Every step
shows in a `browser` log item with the page's title, URL and a screenshot;
every request the page makes passes the outbound policy (helpers/outbound.py).
Its results are marked in history as text from outside, from the page's URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from browsing.host import shared_host
from browsing.session import Step, TargetKind
from core.tool import EXPANDS_SECRETS, Response, Tool, ToolArgs
from helpers import outbound
from helpers.errors import RepairableException, UserError
from helpers.folders import work_dir
from helpers.told import render_lines

if TYPE_CHECKING:
    from core.log import LogItem

METHODS = (
    "open", "read", "click", "type", "select", "scroll", "back", "tabs", "screenshot", "wait_for",
)  # fmt: skip
#: Steps after which the agent gets the page's text with the result (it would read next).
SHOWS_TEXT = {"open", "read", "click", "back"}
#: Where the page gets a step's screenshot (server/routes/chat_browser.py).
SHOT_URL = "/api/chats/{chat}/browser/shots/{name}"


class BrowserArgs(ToolArgs):
    url: str = Field(default="", max_length=4_000, description="open: the page's URL.")
    target: str = Field(
        default="", max_length=2_000,
        description="click/type/select: the number read gave, a visible text or a CSS selector.",
    )  # fmt: skip
    by: TargetKind = Field(default="auto", description="How to take target (auto: guess).")
    #: Typed into a page: a login form may need a secret's value.
    text: Annotated[str, EXPANDS_SECRETS] = Field(
        default="", max_length=100_000, description="type: what to type; wait_for: the text."
    )
    submit: bool = Field(default=False, description="type: press Enter after typing.")
    option: str = Field(default="", description="select: the option's label or value.")
    direction: Literal["down", "up"] = "down"
    action: Literal["list", "switch", "close"] = "list"
    index: int = Field(default=0, ge=0, description="tabs: the tab's number (1-based).")
    full_page: bool = False


class Browser(Tool):
    """Drives the chat's browser one step at a time."""

    Args = BrowserArgs
    methods = METHODS

    async def execute(self, args: BrowserArgs) -> Response:
        async with self.ctx.browser.lock:
            return await self._execute(args)

    async def _execute(self, args: BrowserArgs) -> Response:
        if self.method == "open" and not args.url.strip():
            raise RepairableException(self.ctx.read_prompt("fw.browser.url_missing.md"))
        browser = self.ctx.browser
        settings = self.ctx.settings
        runtime = self.ctx.runtime
        if runtime is None:
            raise RepairableException(self.ctx.read_prompt("fw.browser.no_runtime.md"))
        host = shared_host(runtime)
        policy = outbound.policy(settings, runtime.loopback_only, self.ctx.space)
        try:
            await browser.start(
                host, settings.browser_executable, policy, settings.browser_timeout,
                work_dir(settings.work_dir, self.ctx.space) / "downloads",
            )  # fmt: skip
        except UserError as exc:
            raise RepairableException(str(exc)) from None
        if self.method == "tabs":
            tabs = await browser.tabs(args.action, args.index)
            listed = render_lines(tabs, self.ctx.read_prompt)
            return await self._answer(await browser.state(), tabs=listed)
        if self.method == "screenshot":
            path = await browser.screenshot(args.full_page)
            return await self._answer(await browser.state(), screenshot=str(path))
        step = await self._step(args)
        text, more = await browser.read() if self.method in SHOWS_TEXT else ("", 0)
        return await self._answer(step, text=text, more=f"{more:,}" if more else "")

    async def _step(self, args: BrowserArgs) -> Step:
        browser = self.ctx.browser
        needs_target = {"click", "type", "select"}
        if self.method in needs_target and not args.target.strip():
            raise RepairableException(
                self.ctx.read_prompt("fw.browser.target_missing.md", method=self.method)
            )
        match self.method:
            case "open":
                return await browser.goto(args.url.strip())
            case "click":
                return await browser.click(args.target, args.by)
            case "type":
                return await browser.type(args.target, args.text, args.by, args.submit)
            case "select":
                return await browser.select(args.target, args.option, args.by)
            case "scroll":
                return await browser.scroll(args.direction)
            case "back":
                return await browser.back()
            case "wait_for":
                if not args.text:
                    raise RepairableException(self.ctx.read_prompt("fw.browser.text_missing.md"))
                return await browser.wait_for(args.text)
            case _:
                return await browser.state()

    async def _answer(self, step: Step, **parts: str) -> Response:
        settings = self.ctx.settings
        root = work_dir(settings.work_dir, self.ctx.space)
        downloads = [
            f"{path.relative_to(root) if path.is_relative_to(root) else path} "
            f"({path.stat().st_size} bytes)"
            for path in step.downloads
        ]
        if self.log is not None:
            shot = SHOT_URL.format(chat=self.ctx.chat_id, name=step.shot) if step.shot else ""
            self.log.update(kvps={"title": step.title, "url": step.url, "screenshot": shot})
        message = self.ctx.read_prompt(
            "fw.browser.step.md",
            **{"tabs": "", "screenshot": "", "text": "", "more": "", **parts},
            title=step.title, url=step.url,
            cut=f"{settings.browser_timeout:g}" if step.cut else "",
            downloads=", ".join(downloads), refused="; ".join(step.refused),
        )  # fmt: skip
        # What a page says (its text, title, tabs' titles) is data from the page, never
        # instructions: history marks it with the page's address (core/prompt/untrusted.py).
        return Response(message, source=step.url or "about:blank")

    def get_log_object(self) -> LogItem:
        kvps = {key: value for key, value in self.args.items() if value not in ("", None)}
        return self.ctx.log_row("browser", f"Browser {self.method or ''}".rstrip(), kvps=kvps)
