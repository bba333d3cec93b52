"""A tool of an MCP server, run like Cadre's own: validated, logged, its result recorded.

The arguments are checked against the tool's input schema before the call (a
mismatch is a repairable error listing what is wrong and what the tool takes);
`§§secret(NAME)` placeholders are expanded in every argument, since the server
needs the values, while the log and history keep the placeholders. A server
error, an error result or a call cut at `mcp_tool_timeout` goes back to the
model as a repairable message. The call is logged as its own kind, `mcp_tool`,
with the images and resources it returned saved as files in the chat's folder. What the
server answers (its result, its error text) is marked in history as text from outside,
from the server (core/prompt/untrusted.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from core.prompt import tool_manuals, untrusted
from core.tool import Response, Tool, expand_arguments
from helpers import tool_rules
from helpers.errors import RepairableException
from mcp_client.results import McpResult, read_result
from mcp_client.status import McpCallError, McpTimeout, McpUnavailable
from mcp_client.tools import McpToolInfo, arguments_text
from mcp_client.validation import argument_problems

if TYPE_CHECKING:
    from core.agent_types import LoopData
    from core.log import LogItem
    from core.run_context import RunContext
    from mcp_client.supervisor import McpSupervisor


def file_url(chat_id: str, path: str) -> str:
    """The address the UI shows a saved file at (server/routes/mcp_servers.py serves it)."""
    return f"/api/chats/{chat_id}/files/{path}"


class McpTool(Tool):
    """One call of an MCP server's tool (`<server>.<tool>`)."""

    def __init__(
        self,
        ctx: RunContext,
        info: McpToolInfo,
        supervisor: McpSupervisor,
        args: dict[str, Any],
        message: str,
        loop_data: LoopData | None,
    ) -> None:
        super().__init__(ctx, info.full_name, None, args, message, loop_data)
        self.info = info
        self.supervisor = supervisor
        self.result: McpResult | None = None

    def rule_names(self) -> list[str]:
        """`mcp:<server>:<tool>`, `mcp:<server>`, `mcp`, `*` (helpers/tool_rules.py)."""
        return tool_rules.call_names(self.info.name, mcp_server=self.info.server)

    def tool_arguments(self) -> dict[str, Any]:
        """The arguments with every `§§secret(NAME)` expanded (an unknown name is repairable)."""
        return expand_arguments(self.ctx, self.args, None)

    def validate_args(self, raw: dict[str, Any] | None = None) -> Any:
        """`raw` if it fits the tool's input schema; else a repairable error saying where not."""
        arguments = self.args if raw is None else raw
        schema = self.info.input_schema or {"type": "object"}
        problems = "; ".join(argument_problems(schema, arguments))
        if not problems:
            return arguments
        tool_manuals.mark_read(self.ctx, self.name)  # its whole section, from now on
        # The message quotes values: one that holds an expanded secret must not show it.
        raise RepairableException(
            self.ctx.mask(
                self.ctx.read_prompt(
                    "fw.mcp.args_invalid.md",
                    tool_name=self.name,
                    problems=problems,
                    arguments=arguments_text(schema),
                )
            )
        )

    def get_log_object(self) -> LogItem:
        return self.ctx.log.log(
            type="mcp_tool", heading=self.name, kvps=self.args, agentno=self.ctx.number
        )

    async def execute(self, args: Any) -> Response:
        settings = self.ctx.settings
        try:
            result = await self.supervisor.call(self.info, args, settings.mcp_tool_timeout)
        except McpTimeout as exc:
            seconds = f"{settings.mcp_tool_timeout:g}"
            raise RepairableException(
                self.ctx.read_prompt("fw.mcp.timeout.md", tool_name=self.name, seconds=seconds)
            ) from exc
        except McpUnavailable as exc:
            raise RepairableException(
                self.ctx.read_prompt(
                    "fw.mcp.unavailable.md",
                    tool_name=self.name,
                    server=self.info.server,
                    state=str(exc),
                )
            ) from exc
        except McpCallError as exc:
            raise self._error(str(exc)) from exc
        self.result = await asyncio.to_thread(read_result, result, self.ctx.chat_id)
        if self.result.is_error:
            self._log_files()
            raise self._error(self.result.text or "no details given")
        if not self.result.text:
            return Response(self.ctx.read_prompt("fw.mcp.no_output.md"))
        # What a server answers is text from outside: marked with the server's name.
        return Response(self.result.text, source=self.info.server)

    def _error(self, error: str) -> RepairableException:
        # A server's error text is its own words too: marked as text from outside.
        error = untrusted.mark(error, self.name, self.info.server)
        return RepairableException(
            self.ctx.mask(self.ctx.read_prompt("fw.mcp.error.md", tool_name=self.name, error=error))
        )

    async def after_execution(self, response: Response) -> None:
        await super().after_execution(response)
        tool_manuals.mark_read(self.ctx, self.name)  # used: its whole section stays
        self._log_files()

    def _log_files(self) -> None:
        """The saved images and resources, as the UI's addresses, in the call's log item."""
        if self.log is None or self.result is None:
            return
        chat = self.ctx.chat_id
        kvps = {key: [file_url(chat, path) for path in paths]
                for key, paths in (("images", self.result.images), ("files", self.result.files))
                if paths}  # fmt: skip
        if kvps:
            self.log.update(kvps=kvps)
