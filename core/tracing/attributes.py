"""What a span says: OpenTelemetry's GenAI semantic conventions, and Cadre's own `cadre.*`.

The conventions (gen_ai.*) name the operation, the model and its provider, the tokens and
the finish reasons; the cost has no name there and is `cadre.usage.cost`, in US dollars.
Each span names its kind as OpenInference does too (`openinference.span.kind`), which
Arize Phoenix draws by.
Text (prompts, replies, tool results, an agent's task) is added only where the
`trace_content` setting allows, masked by the chat's masking rule (the log's), and cut to
`TEXT_LIMIT` characters. A tool call's arguments are always there, masked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from helpers.errors import InterventionException
from helpers.valid_text import valid_text

if TYPE_CHECKING:
    from core.events import ModelCalled

#: Longest text kept in one attribute (a collector refuses, or cuts, huge ones).
TEXT_LIMIT = 32_000

Attributes = dict[str, Any]


def text(value: Any, mask: Callable[[Any], Any]) -> str:
    """`value` masked, as text (JSON for data), cut to `TEXT_LIMIT` characters."""
    masked = mask(value)
    shown = masked if isinstance(masked, str) else json.dumps(masked, ensure_ascii=False,
                                                               default=str)  # fmt: skip
    # A lone surrogate (a JSON escape in the model's reply, not yet cleaned for the tool)
    # cannot be encoded: it would make the whole batch of spans fail to export.
    shown = valid_text(shown)
    return shown if len(shown) <= TEXT_LIMIT else shown[:TEXT_LIMIT] + " [cut]"


def provider_and_model(model: str) -> tuple[str, str]:
    """("openai", "gpt-4.1-mini") of "openai/gpt-4.1-mini": the provider is the setting's
    prefix (litellm's), the model the rest; a name without a prefix is OpenAI's."""
    provider, _, name = model.partition("/")
    return (provider, name) if name else ("openai", model)


def model_call(event: ModelCalled, content: bool, mask: Callable[[Any], Any]) -> Attributes:
    """A model call's attributes."""
    provider, name = provider_and_model(event.model)
    found: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,  # the conventions' older name, which many tools still read
        "gen_ai.request.model": name,
        "cadre.model.role": event.role,
        "openinference.span.kind": "LLM",
    }
    reply = event.reply
    if reply is not None:
        usage = reply.usage
        found["gen_ai.response.model"] = provider_and_model(usage.model)[1] if usage.model else name
        found["gen_ai.usage.input_tokens"] = usage.prompt_tokens
        found["gen_ai.usage.output_tokens"] = usage.completion_tokens
        found["cadre.usage.cost"] = usage.cost
        if reply.finish_reason:
            found["gen_ai.response.finish_reasons"] = (reply.finish_reason,)
        found["cadre.reply.stopped_early"] = reply.stopped_early
        if content:
            output = [{"role": "assistant", "parts": [{"type": "text", "content": reply.text}],
                       "finish_reason": reply.finish_reason or "stop"}]  # fmt: skip
            found["gen_ai.output.messages"] = text(output, mask)
    if content:
        found["gen_ai.input.messages"] = text(event.messages, mask)
    found["cadre.model.outcome"] = outcome(event.error)
    if event.error is not None and found["cadre.model.outcome"] == "failed":
        found["error.type"] = type(event.error).__name__
    return found


def outcome(error: BaseException | None) -> str:
    """How a model call ended: "done", cut short by the user ("interrupted", "stopped"),
    or "failed" (the provider, a reply too long): only that one is an error."""
    if error is None:
        return "done"
    if isinstance(error, InterventionException):
        return "interrupted"
    return "stopped" if isinstance(error, asyncio.CancelledError) else "failed"


def tool_call(name: str, args: dict[str, Any], mask: Callable[[Any], Any]) -> Attributes:
    """A tool call's attributes as it starts (its arguments masked, always)."""
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": text(args, mask),
        "openinference.span.kind": "TOOL",
    }
