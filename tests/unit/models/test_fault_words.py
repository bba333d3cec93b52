"""Sorting a provider failure into plain words: the cases the wire tests cannot stage
(a failure our own clock noticed, a chain of causes, a context window)."""

from __future__ import annotations

import httpx

from models.provider_faults import classify, retry_reason


class StatusError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message


def test_our_own_clock_says_which_limit_ran_out():
    fault = classify(None, detail="the model sent nothing within 2 s (llm_first_chunk_timeout)",
                     tries=2)  # fmt: skip
    assert fault.kind == "timeout"
    assert fault.headline == (
        "The model sent nothing within 2 s (llm_first_chunk_timeout). Cadre tried 2 times."
    )


def test_a_refused_connection_deep_in_the_chain_is_no_server():
    try:
        try:
            raise httpx.ConnectError("[Errno 111] Connection refused")
        except httpx.ConnectError as inner:
            raise StatusError(500, "InternalServerError: OpenAIException") from inner
    except StatusError as outer:
        fault = classify(outer, api_base="http://localhost:8000/v1")
    assert fault.kind == "unreachable"
    assert fault.headline == "No server answers at http://localhost:8000/v1."
    assert "Connection refused" in fault.detail and "OpenAIException" in fault.detail


def test_a_full_context_window_is_not_called_a_bad_request():
    fault = classify(StatusError(400, "This model's maximum context length is 8192 tokens"))
    assert fault.kind == "context" and "Start a new chat" in fault.fix


def test_an_unknown_failure_still_says_what_to_do():
    fault = classify(RuntimeError("something odd"))
    assert fault.kind == "other" and fault.fix and fault.detail == "something odd"
    assert retry_reason(fault) == "The provider failed"
