"""The JSON schema of a whole agent reply, built from the tools an agent has.

`{"thoughts": [...], "headline": "...", "tool_name": <one of the agent's
tools>, "tool_args": <that tool's arguments>}`: one variant per tool (and
per method, `text_editor:read`; an MCP tool's has its input schema), so a
decoder held to it can only write a reply Cadre parses and runs. Lengths are
bounded so that a small model, held to the grammar, still comes to an end.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.agent_types import is_small
from core.tool import Tool
from core.tooling.tool_loader import find_tool_file, load_tool_class, tool_names
from core.tooling.tool_offer import mcp_tools
from models import model_facts
from models.llm import ModelConfig, litellm_imported, litellm_loaded, litellm_module
from models.local_model import is_local

if TYPE_CHECKING:
    from core.agent import Agent
    from helpers.settings import Settings
    from mcp_client.tools import McpToolInfo
    from profiles.projects import ProjectLike

#: Bounds that keep a constrained small model from writing forever.
THOUGHTS_MAX = 3
THOUGHT_LENGTH = 240
HEADLINE_LENGTH = 100
#: Tighter bounds in small-model mode: every token of thought costs a slow CPU
#: a tenth of a second, and a small model's long answers ramble.
SMALL_THOUGHTS_MAX = 1
SMALL_THOUGHT_LENGTH = 120
SMALL_HEADLINE_LENGTH = 60
SMALL_ANSWER_LENGTH = 2_000


#: A bounded fraction is offered as this many evenly spaced values (see `_fractions_as_steps`).
FRACTION_STEPS = 20


def _fractions_as_steps(schema: dict[str, Any]) -> None:
    """Give each number bounded within a span of 1 (a similarity threshold) as a list of values.

    llama.cpp's grammar bounds integers but not other numbers, so a small model
    held to it still wrote a threshold of 75 where at most 1 is allowed. Steps of
    0.05 are as fine as such a setting needs. Changes `schema` in place.
    """
    fields = [*schema.get("properties", {}).values()]
    for nested in schema.get("$defs", {}).values():
        fields += nested.get("properties", {}).values()
    for field in fields:
        low, high = field.get("minimum"), field.get("maximum")
        if field.get("type") != "number" or low is None or high is None or not 0 < high - low <= 1:
            continue
        step = (high - low) / FRACTION_STEPS
        steps = [round(low + i * step, 6) for i in range(FRACTION_STEPS + 1)]
        default = field.get("default")
        if isinstance(default, int | float) and default not in steps:
            steps = sorted({*steps, default})
        for key in ("type", "minimum", "maximum"):
            field.pop(key)
        field["enum"] = steps


def tool_variant(name: str, tool: type[Tool], small: bool = False) -> dict[str, Any]:
    """The reply schema for calling `name` (a tool, or `tool:method`) with its arguments.

    `small`: the tighter bounds of small-model mode, the final answer's length too.
    """
    return _variant(name, tool.Args.model_json_schema(), small)


def mcp_variant(tool: McpToolInfo, small: bool = False) -> dict[str, Any]:
    """The reply schema for calling an MCP server's tool, with its input schema."""
    return _variant(tool.full_name, tool.input_schema or {"type": "object"}, small)


def _variant(name: str, schema: dict[str, Any], small: bool) -> dict[str, Any]:
    args = copy.deepcopy(schema)
    args.pop("title", None)
    args.pop("$schema", None)  # a server's draft marker has no place inside a reply schema
    args.setdefault("type", "object")
    _fractions_as_steps(args)
    if small and name == "response":
        text = args.get("properties", {}).get("text")
        if text is not None:
            text["maxLength"] = min(text.get("maxLength", SMALL_ANSWER_LENGTH), SMALL_ANSWER_LENGTH)
    thoughts, thought = (SMALL_THOUGHTS_MAX, SMALL_THOUGHT_LENGTH) if small else (
        THOUGHTS_MAX, THOUGHT_LENGTH)  # fmt: skip
    return {
        "type": "object",
        "properties": {
            "thoughts": {
                "type": "array",
                "items": {"type": "string", "maxLength": thought},
                "maxItems": thoughts,
            },
            "headline": {
                "type": "string",
                "maxLength": SMALL_HEADLINE_LENGTH if small else HEADLINE_LENGTH,
            },
            "tool_name": {"const": name},
            "tool_args": args,
        },
        "required": ["thoughts", "headline", "tool_name", "tool_args"],
        "additionalProperties": False,
    }


def reply_schema(
    tools: dict[str, type[Tool]], small: bool = False, mcp: Sequence[McpToolInfo] = ()
) -> dict[str, Any]:
    """One schema for a reply calling any of `tools` (name → Tool class) or of the MCP
    tools `mcp`."""
    variants = []
    for name, tool in sorted(tools.items()):
        methods = tool.methods or (None,)
        for method in methods:
            variants.append(tool_variant(f"{name}:{method}" if method else name, tool, small))
    variants += [mcp_variant(tool, small) for tool in mcp]
    schema: dict[str, Any] = {"anyOf": variants} if len(variants) != 1 else variants[0]
    # Pydantic puts nested models under $defs of each tool; gather them at the top.
    defs: dict[str, Any] = {}
    for variant in variants:
        found = variant["properties"]["tool_args"].pop("$defs", None)
        if found:
            defs.update(found)
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def loose_schema(tools: dict[str, type[Tool]], mcp: Sequence[McpToolInfo] = ()) -> dict[str, Any]:
    """The reply's shape with `tool_args` as any object: for providers (OpenAI among them)
    that want an object at the root and no union of variants."""
    names = sorted(
        f"{name}:{method}" if method else name
        for name, tool in tools.items()
        for method in (tool.methods or (None,))
    ) + [tool.full_name for tool in mcp]
    return {
        "type": "object",
        "properties": {
            "thoughts": {"type": "array", "items": {"type": "string"}},
            "headline": {"type": "string"},
            "tool_name": {"type": "string", "enum": names},
            "tool_args": {"type": "object"},
        },
        "required": ["thoughts", "headline", "tool_name", "tool_args"],
    }


def wanted(model: ModelConfig, settings: Settings) -> bool:
    """Whether replies of `model` are held to the schema (see the `structured_output` setting)."""
    if is_local(model.model):
        return True  # our own server: always decoded with the grammar
    if settings.structured_output != "auto":
        return settings.structured_output == "on"
    return _supports_schema(model.model)


def asks_litellm(model: ModelConfig, settings: Settings) -> bool:
    """Whether `wanted` must ask litellm's model map (not yet asked for this model); it is
    read without litellm where it can be (models/model_facts.py)."""
    return (
        not is_local(model.model)
        and settings.structured_output == "auto"
        and model.model not in _SUPPORT
    )


async def facts_ready(model: ModelConfig, settings: Settings) -> None:
    """Wait until `wanted` can answer for `model`: litellm's map is read without litellm
    (which may still be importing, seconds at start) unless that map cannot be read."""
    if asks_litellm(model, settings) and not await model_facts.readable():
        await litellm_loaded()


_SUPPORT: dict[str, bool] = {}


def _supports_schema(model: str) -> bool:
    if model not in _SUPPORT and not litellm_imported() and model_facts.known():
        _SUPPORT[model] = model_facts.supports(model, "response_schema")  # litellm importing
    if model not in _SUPPORT:
        litellm = litellm_module()  # loaded by the time an agent calls its model
        try:
            _SUPPORT[model] = bool(litellm.supports_response_schema(model=model))
        except Exception:  # noqa: BLE001 - unknown to litellm: do not send one
            _SUPPORT[model] = False
    return _SUPPORT[model]


def tool_classes(
    profile: str, project: ProjectLike | None = None, names: list[str] | None = None
) -> dict[str, type[Tool]]:
    """The tools `names` (default: every tool `profile` has), by name, with their classes
    (imported on first use)."""
    tools = {}
    for name in tool_names(profile, project) if names is None else names:
        path = find_tool_file(profile, name, project)
        if path is not None:
            tools[name] = load_tool_class(path)
    return tools


#: Built schemas as JSON, by (precise, the tools' names and classes): every model call of
#: every agent asks, and building one (a deep copy of each tool's schema) took 8 ms.
_BUILT: dict[tuple[object, ...], str] = {}
_BUILT_KEPT = 32


def for_agent(agent: Agent, precise: bool, answer_only: bool = False) -> dict[str, Any]:
    """The reply schema of the tools `agent` has now: each tool's own arguments
    (`precise`, for our local server's grammar) or the loose shape (providers).
    `answer_only`: the `response` tool alone (a small model that repeated itself).

    A fresh copy each time (a provider's client may change what it is given);
    call it off the event loop, since a tool not loaded yet is imported here.
    """
    offered = ["response"] if answer_only else agent.available_tools()
    mcp = [] if answer_only else mcp_tools(agent.ctx)
    mcp_names = {tool.full_name for tool in mcp}
    own = [name for name in offered if name not in mcp_names]
    tools = tool_classes(agent.config.profile, agent.chat.project_ref, own)
    small = is_small(agent.config.chat_model)
    # A class is reloaded when its file changes; an MCP tool compares by its schema's
    # canonical JSON (a server may change it on restart).
    key = (precise, small, tuple(mcp), *sorted(tools.items()))
    if key not in _BUILT:
        while len(_BUILT) >= _BUILT_KEPT:
            _BUILT.pop(next(iter(_BUILT)))
        built = reply_schema(tools, small, mcp) if precise else loose_schema(tools, mcp)
        _BUILT[key] = json.dumps(built)
    return json.loads(_BUILT[key])
