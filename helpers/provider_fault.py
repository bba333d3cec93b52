"""A provider's failure in plain words: the data a `ProviderError` carries to the person.

Only the words live here, so that the error (helpers/errors.py) can carry them;
reading a provider's exception into them is models/provider_faults.py's job
(`classify`), which re-exports these names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

FaultKind = Literal[
    "prefix",  # the model name has no provider prefix litellm knows
    "unreachable",  # nothing answers at the URL
    "key",  # the key is missing or refused
    "model",  # the provider does not know the model
    "rate",  # rate limited
    "quota",  # no credit or quota left (402, or a 429 that says so)
    "server",  # the provider's own trouble (5xx)
    "timeout",  # no answer in time
    "context",  # the conversation does not fit the model's window
    "request",  # the provider refused the request for another reason (4xx)
    "other",
]


@dataclass(frozen=True)
class ProviderFault:
    """One provider failure, explained."""

    kind: FaultKind
    #: What failed, in plain words (the headline of an error).
    headline: str
    #: What to do about it.
    fix: str
    #: The provider's and litellm's own text, for "Details".
    detail: str = ""
    status: int | None = None

    @property
    def text(self) -> str:
        """Headline and fix as one paragraph."""
        return f"{self.headline} {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
