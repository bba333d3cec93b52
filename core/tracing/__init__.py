"""Traces of runs over OpenTelemetry: the switch, which imports nothing of OpenTelemetry.

Tracing is on for a run when the environment sets `OTEL_EXPORTER_OTLP_ENDPOINT` or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or the `tracing` setting is on. A chat's one
subscriber here (on `RunStarted`, once per run) decides; only when a run is traced does it
import the SDK (core/tracing/chat_traces.py, run_trace.py, exporting.py), and only then are
the step events (model calls, tools, agents) subscribed to, for that run's length. Off, no
OpenTelemetry module is imported and nothing happens per step: the loop builds a model
call's event only when someone listens (`RunEvents.wants`).

Where the collector is, its headers and the sampling come from the standard `OTEL_*`
variables (the SDK reads them) or the `tracing_*` settings; see core/tracing/exporting.py
and the README's "Traces" section.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from core.events import RunStarted

if TYPE_CHECKING:
    from core.chat import Chat
    from core.tracing.chat_traces import ChatTraces
    from helpers.settings import Settings

#: Either of these set in the environment turns tracing on (the issue's interface).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def is_on(settings: Settings) -> bool:
    """Whether a run under `settings` is traced."""
    return bool(settings.tracing) or any(os.environ.get(name) for name in ENDPOINT_VARIABLES)


def subscribe(chat: Chat) -> None:
    """Trace `chat`'s runs while tracing is on (decided at each run's start)."""
    traces: list[ChatTraces] = []  # made at the first traced run, then kept

    def run_started(event: RunStarted) -> None:
        on = is_on(event.ctx.settings)
        if on and not traces:
            from core.tracing.chat_traces import ChatTraces  # the SDK: only when traced

            traces.append(ChatTraces(chat))
        if traces:
            traces[0].run_started(event, traced=on)

    chat.events.subscribe(RunStarted, run_started)


def preload() -> None:
    """Import what a traced run needs (the SDK and its exporter): at start-up, in a thread
    of its own, when tracing is on (run_ui.py)."""
    import core.tracing.chat_traces  # noqa: F401 - imported for its import's sake


def flush(timeout: float = 5.0) -> bool:
    """Send what is waiting to the collector (a test, a server that ends); True when done
    or nothing was ever traced."""
    exporting: Any = sys.modules.get("core.tracing.exporting")
    return True if exporting is None else bool(exporting.flush(timeout))


def shutdown(timeout: float = 5.0) -> None:
    """Send what is waiting and stop the exporter (at the end of the process); waits at
    most `timeout` seconds, so an unreachable collector does not hold up the stop."""
    exporting: Any = sys.modules.get("core.tracing.exporting")
    if exporting is not None:
        exporting.shutdown(timeout)
