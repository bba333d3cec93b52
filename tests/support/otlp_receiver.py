"""An OTLP/HTTP trace receiver for tests: what a collector reads, read back the same way.

`start_otlp_receiver()` serves `POST /v1/traces` on a free loopback port, decodes each
body as an `ExportTraceServiceRequest` with the opentelemetry-proto package (gzip too)
and keeps its spans as plain `ReceivedSpan`s, attributes decoded from their `AnyValue`.
It answers as a collector does (an empty `ExportTraceServiceResponse`).
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclass
class ReceivedSpan:
    """One span as the collector got it."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any] = field(default_factory=dict)


def value_of(value: AnyValue) -> Any:
    """An `AnyValue` as Python (arrays as tuples)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value_of(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    return getattr(value, kind) if kind else None


def attributes_of(pairs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        found[pair.key] = value_of(pair.value)
    return found


class OtlpReceiver:
    """The server and what it received (thread-safe)."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.take(request, dict(self.headers.items()))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # quiet: the test says what it needs

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def take(self, request: ExportTraceServiceRequest, headers: dict[str, str]) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = attributes_of(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            start=span.start_time_unix_nano,
                            end=span.end_time_unix_nano,
                            attributes=attributes_of(span.attributes),
                            events=[(e.name, attributes_of(e.attributes)) for e in span.events],
                            status_code=span.status.code,
                            status_message=span.status.message,
                            resource=resource,
                        )
                    )
        with self._lock:
            self.requests += 1
            self.headers.append(headers)
            self.spans.extend(spans)

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()
            self.headers.clear()
            self.requests = 0

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_otlp_receiver() -> OtlpReceiver:
    """A receiver listening now on a free loopback port (`.base_url`); `.stop()` it."""
    return OtlpReceiver()
