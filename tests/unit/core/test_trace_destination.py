"""Where traces go, as the server's log names it (core/tracing/exporting.py): a collector's
address may carry a user and password, which the log never shows."""

from __future__ import annotations

import pytest

from core.tracing.exporting import Destination


@pytest.mark.parametrize(
    ("endpoint", "shown"),
    [
        (
            "https://ann:s3cret@collector.example/v1/traces",
            "https://***@collector.example/v1/traces",
        ),
        ("http://localhost:4318/v1/traces", "http://localhost:4318/v1/traces"),
        ("http://host/v1/traces?who=a@b", "http://host/v1/traces?who=a@b"),
    ],
)
def test_the_log_never_shows_a_collectors_credentials(endpoint, shown, monkeypatch):
    assert Destination(endpoint, None, None).shown == shown
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
    assert Destination(None, None, None).shown == shown
