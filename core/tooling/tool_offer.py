"""Which tools an agent is offered: only those that can work here, and fewer for a small model.

Every tool offered costs prompt tokens and is one more way for a model to go
wrong. A tool that cannot work with the settings at hand (`search_engine`
without a SearXNG instance) is never offered. A small model (a local one, or
any with a small window) sees only the few tools a newcomer's first tasks
need: measured with Qwen2.5-Coder 1.5B, six tools instead of thirteen turned
"Memory saved successfully" as the answer to "what is 17*23?" into "391".
Tools a profile brings in its own `tools/` folder are always offered: the
profile was made for them. So are the tools of the MCP servers the user set
up (`<server>.<tool>`, after Cadre's own), limited to the servers a profile
names in its agent.yaml's `mcp_servers`, if it does.

The same list makes the system prompt's tool sections, the reply schema a
local model is held to, and the set of tools a reply may call. A tool that
would be offered but cannot be used (its file fails to import, it has no
prompt file: core/tooling/tool_status.py) is left out of it, and named with the
reason by `unavailable_tools` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from accounts.spaces import is_member
from core.agent_types import is_small
from core.tooling.tool_loader import tool_files
from core.tooling.tool_status import tool_problems
from helpers.files import BASE_DIR
from mcp_client.personal import PersonalServers
from mcp_client.supervisor import McpSupervisor
from profiles.catalog import profile_mcp_servers

if TYPE_CHECKING:
    from core.agent import Agent
    from core.run_context import RunContext
    from helpers.settings import Settings
    from mcp_client.tools import McpToolInfo

#: The shared tools a small model is offered (a subordinate: all but delegation). No
#: `memory_load`: Qwen2.5-Coder 1.5B searched its memories for "the capital of France" and,
#: finding none, said it did not know; what it saved reaches it through automatic recall.
SMALL_TOOLS = ("response", "code_execution_tool", "memory_save", "call_subordinate")
_SHARED_TOOLS = BASE_DIR / "tools"
_SHIPPED_PLUGINS = (BASE_DIR / "plugins").resolve()
#: Tools only Agent 0 is offered: a subordinate talks with no user it could hand over.
TALKER_TOOLS = frozenset({"handoff"})


def unworkable(settings: Settings, small: bool) -> dict[str, str]:
    """Tools that cannot work with these settings, with the reason (for logs and tests)."""
    found = {}
    if not settings.searxng_url.strip():
        found["search_engine"] = "no SearXNG instance is set (searxng_url)"
    if small:
        # It hands up to 40,000 characters of a document to the utility model, which
        # for a small model is the same small window: the answer would come from scraps.
        found["document_query"] = "the utility model's window is too small for documents"
    if settings.chat_vision == "off":
        found["vision_load"] = "the chat model is shown no images (chat_vision is off)"
    if not settings.a2a_agents:
        found["a2a_call"] = "no remote A2A agents are set (a2a_agents)"
    return found


def allowed_to_members(settings: Settings, name: str) -> bool:
    """May a member's agents use tool `name` (`member_tools`: empty allows all)?"""
    allowed = settings.member_tools
    server = name.split(".", 1)[0] + ".*" if "." in name else ""
    return not allowed or name == "response" or name in allowed or server in allowed


def held_back(settings: Settings, owner: str | None, names: list[str]) -> dict[str, str]:
    """The tools of `names` the chat's owner may not use, with why (a member, and the admin
    left them out of `member_tools`)."""
    if not settings.member_tools or not is_member(owner):
        return {}
    why = "your admin has not given members this tool (the member_tools setting)"
    return {name: why for name in names if not allowed_to_members(settings, name)}


def offer(agent: Agent, files: dict[str, Path] | None = None) -> tuple[list[str], dict[str, str]]:
    """In one pass (the system prompt asks both on every step): the tools `agent` is offered
    now (Cadre's own, sorted, then its MCP tools) and those it would be offered but cannot
    use, with why (core/tooling/tool_status.py). `files`: the profile's `tool_files`, if known."""
    names, problems = _own_tools(agent, files)
    mcp = [tool.full_name for tool in mcp_tools(agent.ctx)]
    held = held_back(agent.config.settings, agent.chat.owner, mcp)
    mcp = [name for name in mcp if name not in held]
    return [name for name in names if name not in problems] + mcp, problems


def offered_tools(agent: Agent) -> list[str]:
    """The tools `agent` is offered: those its system prompt told it of, so a reply may
    call exactly them (and they are not listed again on the same step); `offer` before
    it has one."""
    built = agent.built_prompt
    return list(built.tools) if built is not None else offer(agent)[0]


def unavailable_tools(agent: Agent) -> dict[str, str]:
    """The tools `agent` would be offered but cannot use, with why (as `offered_tools`)."""
    built = agent.built_prompt
    return dict(built.unavailable) if built is not None else _own_tools(agent)[1]


def _own_tools(
    agent: Agent, files: dict[str, Path] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Cadre's own tools (files) `agent` is offered if they can be used, sorted, and
    those of them that cannot be used, with why."""
    profile, project = agent.config.profile, agent.chat.project_ref
    files = tool_files(profile, project) if files is None else files
    small = is_small(agent.config.chat_model)
    skip = unworkable(agent.config.settings, small)
    if agent is not agent.chat.agent0:
        skip = {**skip, **dict.fromkeys(TALKER_TOOLS, "only Agent 0 talks with the user")}
    skip = {**skip, **held_back(agent.config.settings, agent.chat.owner, sorted(files))}
    names = [name for name in sorted(files) if name not in skip]
    if small:
        keep = set(SMALL_TOOLS) if agent.number == 0 else set(SMALL_TOOLS) - {"call_subordinate"}
        names = [name for name in names if name in keep or _own_tool(files[name])]
    return names, tool_problems(profile, project, agent.prompts, names, files)


def mcp_supervisor(ctx: RunContext) -> McpSupervisor | None:
    """The MCP servers' connections of the loop the agent runs on (None: no MCP here)."""
    runtime = ctx.runtime
    return runtime.service(McpSupervisor) if runtime is not None else None


def mcp_tools(ctx: RunContext) -> list[McpToolInfo]:
    """The MCP tools the agent is offered: those of ready servers its profile may use,
    the server's shared ones and the chat's owner's own (mcp_client/personal.py: the
    first time the owner runs, theirs start behind, for the steps after)."""
    supervisor = mcp_supervisor(ctx)
    if supervisor is None:
        return []
    allowed = profile_mcp_servers(ctx.profile, ctx.project_ref)
    shared = supervisor.tools(allowed)
    own = ctx.runtime.service(PersonalServers) if ctx.runtime is not None else None
    if own is None:
        return shared
    if not own.known(ctx.owner):
        own.ask(ctx.owner)
    taken = {tool.server for tool in shared}
    return shared + [tool for tool in own.tools(ctx.owner, allowed) if tool.server not in taken]


def mcp_tool(ctx: RunContext, full_name: str) -> tuple[McpSupervisor, McpToolInfo] | None:
    """The supervisor of MCP tool `full_name` (`server.tool`) and the tool, for the chat's
    owner: the server's shared one, else their own (None: no such tool ready)."""
    supervisor = mcp_supervisor(ctx)
    if supervisor is None:
        return None
    own = ctx.runtime.service(PersonalServers) if ctx.runtime is not None else None
    for candidate in (supervisor, own.supervisor(ctx.owner) if own is not None else None):
        info = candidate.find(full_name) if candidate is not None else None
        if candidate is not None and info is not None:
            return candidate, info
    return None


def _own_tool(path: Path) -> bool:
    """True for a tool file of the profile (or project, or a user's plugin), not one of
    Cadre's own: the shared `tools/` folder's, or a shipped plugin's (plugins/notify_user)."""
    folder = path.parent.resolve()
    return folder != _SHARED_TOOLS.resolve() and not folder.is_relative_to(_SHIPPED_PLUGINS)
