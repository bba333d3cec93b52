"""The settings of traces of runs (issue 38, core/tracing/): the fourth part of the
`Settings` schema (helpers/settings_about.py says how the parts chain).

Tracing is on when the `tracing` setting is, or whenever the environment sets
OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the standard OTEL_*
variables win over the settings here (core/tracing/exporting.py).
"""

from __future__ import annotations

from urllib.parse import unquote

from pydantic import Field

from helpers.settings_about import about
from helpers.settings_limits import LimitFields


class TraceFields(LimitFields):
    """The settings' fields up to traces of runs."""

    #: On: each run is a trace sent over OTLP/HTTP (also on with the OTEL_* endpoints set).
    tracing: bool = Field(
        False, **about("Send traces of runs", "Each run as an OpenTelemetry trace to a "
                       "collector (OTLP/HTTP); also on when OTEL_EXPORTER_OTLP_ENDPOINT is set.",
                       "Server and security"),
    )  # fmt: skip
    #: The collector's OTLP/HTTP address, without /v1/traces; the OTEL_* variables win.
    tracing_endpoint: str = Field(
        "", **about("Trace collector", "Its OTLP/HTTP address (/v1/traces is added); empty: "
                    "http://localhost:4318.", "Server and security"),
    )  # fmt: skip
    #: Headers sent with each export, "name=value,name2=value2" (OTEL_EXPORTER_OTLP_HEADERS'
    #: form): a collector's key usually, so masked like one (`header_values`).
    tracing_headers: str = Field(
        "", **about("Trace collector headers", "Sent with each export: name=value pairs "
                    "separated by commas (an API key, Basic credentials).",
                    "Server and security", secret=True),
    )  # fmt: skip
    #: The share of runs traced, decided at each run's start (OTEL_TRACES_SAMPLER wins).
    tracing_sample_ratio: float = Field(
        1.0, ge=0.0, le=1.0,
        **about("Share of runs traced", "1: every run; 0.1: one in ten.",
                "Server and security", "share"),
    )  # fmt: skip
    #: On: a trace holds prompts, replies and tool results (masked as the log is).
    trace_content: bool = Field(
        False, **about("Prompts and replies in traces", "A trace holds the text of prompts, "
                       "replies and tool results too, secrets masked as in the log.",
                       "Server and security"),
    )  # fmt: skip


def header_values(headers: str) -> list[str]:
    """What of a `tracing_headers` value is secret: the whole, and each header's value."""
    values = [headers.strip()]
    for pair in headers.split(","):
        name, sep, value = pair.partition("=")
        if sep and value.strip():
            values.append(unquote(value.strip()))
    return values
