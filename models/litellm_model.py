"""The litellm client: every provider litellm knows (Anthropic, Gemini, Bedrock, ...).

Only the transport lives here (the request's parameters, the call); retries, bounds,
reading and faults are `models.client`'s. litellm's own retries and the OpenAI SDK's
under it are switched off: ours alone decide, and only before the first chunk.
"""

from __future__ import annotations

import os
from typing import Any

from models import local_model
from models.client import ModelClient
from models.llm import litellm_loaded


class LitellmModel(ModelClient):
    """A model called through litellm."""

    name = "litellm"

    def _credentials(self) -> dict[str, Any]:
        """`api_base` and `api_key` as litellm takes them."""
        config = self.config
        found: dict[str, Any] = {}
        if config.api_base:
            found["api_base"] = config.api_base
        if config.api_key:
            found["api_key"] = config.api_key
        elif (
            config.api_base
            and config.model.startswith("openai/")
            and not os.environ.get("OPENAI_API_KEY")
        ):
            # An OpenAI-compatible server of one's own often wants no key, but the
            # client refuses to send a request without one.
            found["api_key"] = "no-key"
        return found

    async def _local(self, request: dict[str, Any]) -> None:
        """Point `request` at the local model's server in this process, loaded on first use."""
        assert self.config.local is not None
        name = self.config.model.removeprefix(local_model.PREFIX)
        request["model"] = f"openai/{name}"
        request["api_base"] = await local_model.LOCAL.endpoint(self.config.local)
        request["api_key"] = "local"

    async def _request(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            **self.config.kwargs,
            "model": self.config.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self.config.timeout,
            # Retries are ours (only before the first chunk); litellm and the
            # openai SDK would otherwise retry on their own as well.
            "num_retries": 0,
            "max_retries": 0,
            **self._credentials(),
        }
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if self.config.local is not None:
            await self._local(request)
        if schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "agent_reply", "schema": schema},
            }
        return request

    async def _send(self, request: dict[str, Any]) -> Any:
        litellm = await litellm_loaded()
        return await litellm.acompletion(**request)

    async def _embed_once(self, texts: list[str]) -> tuple[list[list[float]], int]:
        request: dict[str, Any] = {
            **self.config.kwargs,
            "model": self.config.model,
            "input": texts,
            "timeout": self.config.timeout,
            "num_retries": 0,
            "max_retries": 0,
            **self._credentials(),
        }
        if self.config.local is not None:
            await self._local(request)
        litellm = await litellm_loaded()
        response = await litellm.aembedding(**request)
        vectors = [list(map(float, item["embedding"])) for item in response.data]
        usage = getattr(response, "usage", None)
        return vectors, int(getattr(usage, "prompt_tokens", 0) or 0)
