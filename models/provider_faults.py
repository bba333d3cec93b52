"""A provider's failure in plain words: what failed, and what the person can do about it.

litellm's messages ("litellm.InternalServerError: InternalServerError:
OpenAIException - Connection error.") name its own classes, not the problem.
`classify` reads the exception (its class, HTTP status, the chain of causes)
and says which of a few faults a person can act on it was, with the fix. The
raw text stays in `detail`, for a "Details" fold and the server log.

Used by the chat loop's error item, the setup dialog's connection test and
its model list. `is_transient` says which failures another try may cure; it reads
class names, not classes, so that neither client's library is imported to ask.
`ProviderFault` and its `FaultKind` are defined in helpers/provider_fault.py (the
error carries them) and named here for the code that makes them.
"""

from __future__ import annotations

from typing import cast

from helpers.provider_fault import FaultKind as FaultKind
from helpers.provider_fault import ProviderFault as ProviderFault

#: Words in an exception's text (or its causes') that mean the connection itself failed:
#: the OpenAI SDK reports a refused connection as HTTP 500 "Connection error.".
CONNECTION_MARKS = (
    "connection error",
    "cannot connect to host",
    "connect call failed",
    "connection refused",
    "name or service not known",
    "nodename nor servname",
    "failed to establish a new connection",
    "temporary failure in name resolution",
    "all connection attempts failed",
)
PREFIX_MARK = "llm provider not provided"
#: A stream that broke off after it began: litellm's class, and the lean client's.
BROKEN_STREAM_CLASSES = frozenset({"MidStreamFallbackError", "StreamBroken"})
#: HTTP statuses worth another try: timeouts, conflicts, rate limits, server trouble.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
#: Exception classes (or their bases) of a connection that failed or timed out: the
#: OpenAI SDK's (litellm's subclass them) and httpx's, which the SDK lets through
#: when a stream breaks while it is read.
TRANSIENT_CLASSES = frozenset({"APIConnectionError", "TimeoutError", "ConnectionError",
                               "TransportError"})  # fmt: skip
CONTEXT_MARKS = ("context window", "context_length_exceeded", "maximum context length")
#: Words of a provider saying the account has no credit or quota left (OpenAI sends them
#: with a 429, which a retry does not cure).
QUOTA_MARKS = ("insufficient_quota", "quota exceeded", "exceeded your current quota",
               "insufficient credit", "insufficient balance", "credit balance",
               "out of credit")  # fmt: skip
MODEL_MARKS = ("model_not_found", "does not exist", "unknown model", "no such model", "not found")


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it (explicit causes, contexts, litellm's original_exception)."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 10:
        current = todo.pop(0)
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        original = getattr(current, "original_exception", None)
        todo += [current.__cause__, current.__context__]
        if isinstance(original, BaseException):
            todo.append(original)
    return seen


def _status(chain: list[BaseException]) -> int | None:
    for exc in chain:
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _class_names(chain: list[BaseException]) -> set[str]:
    return {cls.__name__ for exc in chain for cls in type(exc).__mro__}


def raw_text(exc: BaseException) -> str:
    """The exception's own words, one line per link of its chain, without repeats."""
    lines: list[str] = []
    for link in _chain(exc):
        text = str(getattr(link, "message", "") or link).strip()
        if text and text not in lines:
            lines.append(text)
    return "\n".join(lines)


def _where(api_base: str) -> str:
    return f"at {api_base}" if api_base else "at the provider's address"


#: What each kind of fault says: its headline and its fix, in plain words. The headline's
#: fields: {model}, {where} (the server's address), {status}, {tried} (" Cadre tried N
#: times." after retries), {what} (a timeout: which limit ran out).
WORDS: dict[str, tuple[str, str]] = {
    "prefix": (
        "The model name {model!r} has no provider prefix.",
        "Add the provider prefix, e.g. openai/<model> for an OpenAI-compatible URL, "
        "ollama/<model> for Ollama.",
    ),
    "broken": (
        "The provider's reply broke off in the middle.{tried}",
        "Retry; if it keeps happening, the provider or the connection to it is unstable.",
    ),
    "unreachable": (
        "No server answers {where}.{tried}",
        "Check the URL (with its /v1 where the server wants one) and that the server runs.",
    ),
    "key": (
        "The provider refused the API key (HTTP {status}).",
        "Check the key: copy it again from the provider's site, and set it in Set up a model.",
    ),
    "context": (
        "The conversation no longer fits the model's context window.",
        "Start a new chat, or choose a model with a larger window.",
    ),
    "model": (
        "The model name {model!r} is unknown to the provider (HTTP {status}).",
        "Check the model name (pick one from the provider's list), and the URL's path.",
    ),
    "rate": (
        "The provider is limiting how fast Cadre may call it (HTTP 429).{tried}",
        "Wait a minute, then retry; or check your plan's limits with the provider.",
    ),
    "quota": (
        "The provider refused: no credit or quota left (HTTP {status}).",
        "Add credit or raise the quota with the provider, or set a fallback model in Settings.",
    ),
    "timeout": (
        "{what}{tried}",
        "Retry; if it keeps happening, the provider is overloaded or the model too slow "
        "for the time limits in Settings.",
    ),
    "server": (
        "The model provider had an internal error (HTTP {status}).{tried}",
        "Retry, or check the provider's status.",
    ),
    "request": (
        "The provider refused the request (HTTP {status}).",
        "See Details for the provider's reason; a setting in the model's extra "
        "options may not suit it.",
    ),
    "other": ("The model call failed.{tried}", "See Details; then retry."),
}
#: Whose words a kind borrows while being a kind of its own for the rules below: a stream
#: that broke is a server fault to the person.
_SHOWN_AS: dict[str, FaultKind] = {"broken": "server"}
_CONNECTION_CLASSES = {"APIConnectionError", "ConnectError", "ClientConnectorError",
                       "ConnectionError"}  # fmt: skip


def classify(
    exc: BaseException | None,
    *,
    model: str = "",
    api_base: str = "",
    tries: int = 1,
    detail: str = "",
) -> ProviderFault:
    """The fault `exc` stands for (None: a failure without an exception, say a timeout
    our own clock noticed; `detail` then says what happened)."""
    chain = _chain(exc) if exc is not None else []
    detail = detail or (raw_text(exc) if exc is not None else "")
    status = _status(chain)
    kind = _kind(exc, detail.lower(), status, _class_names(chain))
    headline, fix = WORDS[kind]
    if exc is None and detail:  # our own clock says which limit ran out: plain already
        what = f"{detail[:1].upper()}{detail[1:]}."
    else:
        what = "The model provider did not answer in time."
    default_status = {"key": 401, "model": 404}.get(kind)
    headline = headline.format(
        model=model, where=_where(api_base), status=status or default_status, what=what,
        tried=f" Cadre tried {tries} times." if tries > 1 else "",
    )  # fmt: skip
    shown = _SHOWN_AS.get(kind) or cast("FaultKind", kind)
    return ProviderFault(shown, headline, fix, detail, status)


def _kind(exc: BaseException | None, text: str, status: int | None, names: set[str]) -> str:
    """Which kind of fault, by the first rule that holds (their order matters)."""
    if PREFIX_MARK in text:
        return "prefix"
    if names & BROKEN_STREAM_CLASSES:
        return "broken"  # before the connection marks: the server answered, then broke off
    if any(mark in text for mark in CONNECTION_MARKS) or names & _CONNECTION_CLASSES:
        return "unreachable"
    if status in (401, 403) or names & {"AuthenticationError", "PermissionDeniedError"}:
        return "key"
    if "ContextWindowExceededError" in names or any(m in text for m in CONTEXT_MARKS):
        return "context"
    unknown_model = status == 400 and any(mark in text for mark in MODEL_MARKS)
    if status == 404 or "NotFoundError" in names or unknown_model:
        return "model"
    if status == 402 or (status == 429 and any(mark in text for mark in QUOTA_MARKS)):
        return "quota"
    if status == 429 or "RateLimitError" in names:
        return "rate"
    if exc is None or names & {"Timeout", "TimeoutError"} or "timed out" in text:
        return "timeout"
    if status is not None and status >= 500:
        return "server"
    if status is not None and 400 <= status < 500:
        return "request"
    return "other"


#: How a retry names what went wrong, by kind ("The provider failed (HTTP 500); retrying...").
RETRY_REASONS: dict[str, str] = {
    "unreachable": "No server answered",
    "rate": "The provider is limiting requests (HTTP 429)",
    "timeout": "The provider did not answer in time",
}


def retry_reason(fault: ProviderFault) -> str:
    """A few words for the live "retrying" line."""
    if fault.kind in RETRY_REASONS:
        return RETRY_REASONS[fault.kind]
    return f"The provider failed (HTTP {fault.status})" if fault.status else "The provider failed"


def is_transient(exc: BaseException) -> bool:
    """True for failures another try may cure (a 429 that says the quota is spent is not)."""
    status = getattr(exc, "status_code", None)
    if status == 429 and any(mark in raw_text(exc).lower() for mark in QUOTA_MARKS):
        return False
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    return bool({cls.__name__ for cls in type(exc).__mro__} & TRANSIENT_CLASSES)


def provider_message(exc: BaseException) -> str:
    """The provider's own words, without litellm's long prefixes or a traceback."""
    message = str(getattr(exc, "message", "") or exc).strip()
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    head = f"{kind} ({status})" if status else kind
    return f"{head}: {message}" if message else head


#: How a move to a fallback model names what went wrong, by kind ("... refused: ...").
MOVE_REASONS: dict[str, str] = {
    "prefix": "cannot be called: its name has no provider prefix",
    "unreachable": "did not answer: no server at its address",
    "key": "refused: the API key was refused",
    "quota": "refused: no credit or quota left",
    "model": "refused: the model is unknown to the provider",
    "context": "refused: the conversation is too long for it",
    "rate": "refused: rate limited beyond the retries",
    "server": "failed: the provider had errors through every retry",
    "timeout": "did not answer in time",
}


def move_reason(fault: ProviderFault) -> str:
    """A few words for the line that says a call moved to a fallback model."""
    return MOVE_REASONS.get(fault.kind, "failed")
