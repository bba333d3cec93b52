"""The process's tracer: OpenTelemetry's SDK, a batch processor and the OTLP/HTTP exporter.

Made at the first traced run (core/tracing/__init__.py imports this module only then) and
made again when the destination changes (a setting was changed). Where spans go:

- the endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` when
  set (the SDK reads them), else the `tracing_endpoint` setting with `/v1/traces` added,
  else the SDK's default (http://localhost:4318/v1/traces);
- the headers: `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` when set, else `tracing_headers`;
- the sampling: `OTEL_TRACES_SAMPLER` (and its argument) when set, else
  `tracing_sample_ratio` (a share of runs, decided at the run's root span);
- the service's name: `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` when they give
  one, else "cadre".

Spans leave in batches from the SDK's own thread: a slow or unreachable collector never
holds up a run. Its failures are told once in the log (until an export succeeds again),
not at every retry as the exporter's own logger would.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, Sampler, TraceIdRatioBased
from opentelemetry.trace import Tracer
from opentelemetry.util.re import parse_env_headers

if TYPE_CHECKING:
    from helpers.settings import Settings

log = logging.getLogger(__name__)

#: The exporter logs each retry and each failed batch; `_TellOnce` says it once instead.
logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class Destination:
    """Where spans go and which are kept; None: the SDK reads the `OTEL_*` variable."""

    endpoint: str | None
    headers: str | None
    ratio: float | None

    @property
    def shown(self) -> str:
        """The endpoint as the log names it (a user and password in it left out)."""
        if self.endpoint is not None:
            return _without_credentials(self.endpoint)
        traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
        return _without_credentials(traces or base.rstrip("/") + TRACES_PATH)


def _without_credentials(url: str) -> str:
    """`https://user:secret@host/v1/traces` as `https://***@host/v1/traces`."""
    scheme, sep, rest = url.partition("://")
    where, at, after = rest.partition("@")
    if not sep or not at or "/" in where:
        return url
    return f"{scheme}://***@{after}"


def destination(settings: Settings) -> Destination:
    """The destination `settings` and the environment give (the environment wins)."""
    endpoint: str | None = None
    if not any(os.environ.get(name) for name in _ENDPOINT_VARIABLES) and settings.tracing_endpoint:
        endpoint = settings.tracing_endpoint.strip().rstrip("/")
        if not endpoint.endswith(TRACES_PATH):
            endpoint += TRACES_PATH
    headers: str | None = None
    if not any(os.environ.get(name) for name in _HEADER_VARIABLES) and settings.tracing_headers:
        headers = settings.tracing_headers
    ratio: float | None = None
    if not os.environ.get("OTEL_TRACES_SAMPLER") and settings.tracing_sample_ratio < 1:
        ratio = settings.tracing_sample_ratio
    return Destination(endpoint, headers, ratio)


class _TellOnce(SpanExporter):
    """The OTLP exporter, its failures told once in the log (again after a success)."""

    def __init__(self, inner: SpanExporter, where: str) -> None:
        self.inner = inner
        self.where = where
        self.failing = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.failing = False
        elif not self.failing:
            self.failing = True
            log.warning(
                "Traces could not be sent to %s: the collector did not take them. Check that "
                "it runs and its address (tracing_endpoint, or OTEL_EXPORTER_OTLP_ENDPOINT); "
                "runs go on, their spans are dropped meanwhile.",
                self.where,
            )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _resource() -> Resource:
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    return Resource.create({} if named else {"service.name": "cadre"})


def _provider(where: Destination) -> TracerProvider:
    sampler: Sampler | None = None
    if where.ratio is not None:
        sampler = ParentBased(TraceIdRatioBased(where.ratio))
    headers = parse_env_headers(where.headers, liberal=True) if where.headers else None
    exporter = OTLPSpanExporter(endpoint=where.endpoint, headers=headers)
    # Not the global provider: Cadre's spans are its own, and a change of settings
    # replaces this one without the SDK's set-once rule.
    provider = TracerProvider(sampler=sampler, resource=_resource(), shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(_TellOnce(exporter, where.shown)))
    log.info("Traces of runs go to %s", where.shown)
    return provider


_lock = threading.Lock()
_current: tuple[Destination, TracerProvider] | None = None


def tracer(settings: Settings) -> Tracer:
    """The tracer for a run under `settings` (the provider made or replaced as needed)."""
    global _current
    where = destination(settings)
    with _lock:
        old = _current
        if old is None or old[0] != where:
            _current = (where, _provider(where))
            if old is not None:  # what it holds still leaves, off the caller's thread
                threading.Thread(target=old[1].shutdown, name="trace-shutdown",
                                 daemon=True).start()  # fmt: skip
        return _current[1].get_tracer("cadre")


def flush(timeout: float = 5.0) -> bool:
    """Export the spans waiting in the batch now; False if it took longer than `timeout`."""
    with _lock:
        current = _current
    return True if current is None else current[1].force_flush(int(timeout * 1000))


def shutdown(timeout: float = 5.0) -> None:
    """Flush and stop the exporter, waiting at most `timeout` seconds (a thread of its own:
    the exporter's retries against a collector that does not answer may take longer)."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is None:
        return
    stopping = threading.Thread(target=current[1].shutdown, name="trace-shutdown", daemon=True)
    stopping.start()
    stopping.join(timeout)
    if stopping.is_alive():
        log.warning("Traces still waiting after %g s were dropped at the stop", timeout)
