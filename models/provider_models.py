"""The models a provider offers, asked of the provider itself (for the setup's model menu).

OpenAI, OpenRouter and any OpenAI-compatible server answer `GET <base>/models`,
Anthropic `GET /v1/models` (with its own headers), Ollama `GET <base>/api/tags`.
Each id comes back as a litellm name (with the provider's prefix). A failure is
a `ProviderFault` in plain words, like a failed test call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from models.provider_faults import ProviderFault, classify
from models.provider_table import Provider

log = logging.getLogger(__name__)

#: Seconds the list may take.
LIST_TIMEOUT = 10.0
#: Most models offered (OpenRouter lists hundreds; the menu still filters as one types).
MOST = 500


class ListFailed(Exception):
    """The provider answered the list request with an HTTP error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message


@dataclass
class ModelListing:
    """The models found (litellm names), or why there are none."""

    models: list[str] = field(default_factory=list)
    fault: ProviderFault | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "problem": self.fault.to_dict() if self.fault is not None else None,
        }


def _request(provider: Provider, api_key: str, base: str) -> tuple[str, dict[str, str]]:
    """The list's URL and headers."""
    headers: dict[str, str] = {}
    if provider.models == "ollama":
        return f"{base.rstrip('/')}/api/tags", headers
    if provider.models == "anthropic":
        headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        return f"{provider.default_url}/models", headers
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    root = base if provider.models == "compatible" else provider.default_url
    return f"{root.rstrip('/')}/models", headers


def _names(provider: Provider, body: Any) -> list[str]:
    """The model ids in a list's JSON body, as litellm names."""
    entries = (
        body.get("models" if provider.models == "ollama" else "data", [])
        if isinstance(body, dict)
        else []
    )
    key = "name" if provider.models == "ollama" else "id"
    ids = [str(e[key]) for e in entries if isinstance(e, dict) and e.get(key)]
    return sorted({provider.prefix + i for i in ids})[:MOST]


def list_models(provider: Provider, api_key: str = "", base: str = "") -> ModelListing:
    """Ask `provider` for its models (blocking, bounded by LIST_TIMEOUT)."""
    if not provider.models:
        return ModelListing()
    import httpx  # here, not at start: only the setup dialog lists models (12 ms of start-up)

    url, headers = _request(provider, api_key, base)
    try:
        with httpx.Client(timeout=LIST_TIMEOUT, follow_redirects=False) as client:
            response = client.get(url, headers=headers)
        if response.status_code >= 400:
            raise ListFailed(response.status_code, response.text[:1_000])
        return ModelListing(_names(provider, response.json()))
    except (httpx.HTTPError, ListFailed, ValueError) as exc:
        log.info("listing the models of %s at %s failed: %s", provider.name, url, exc)
        if isinstance(exc, ListFailed) and exc.status_code == 404:
            fault = ProviderFault(
                "request",
                f"The server answers, but lists no models at {url} (HTTP 404).",
                "Check the URL: an OpenAI-compatible one usually ends in /v1. "
                "You can still type the model's name.",
                exc.message,
                404,
            )
        else:
            fault = classify(exc, api_base=base or url)
        return ModelListing(fault=fault)
