"""Traces across the hop: OpenTelemetry spans, off unless an OTLP endpoint is set (ADR 0040).

Both ends of a call use this module: the navigator opens spans for the MCP request, the grant
read, validation, confirmation and the node hop, and writes its node-hop span's W3C trace context
into the ``tools/call`` it sends (``_meta.traceparent``); the node agent continues that context into
the module's span. Tracing is on when the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, and then exports over OTLP/HTTP, batched off the
call path; the exporter reads the other standard variables (timeout, certificates) itself, and
its headers are read here, from the environment ``configure`` is given.

The spans are meshnav's own: a provider of this process alone, never the global one, so the
libraries' own instrumentation (the MCP SDK's, FastMCP's) stays silent, and nothing else is
propagated. A span's attributes are addresses, principals, roles, tool names and error codes, set
by name here and nowhere else: never arguments, queries, results, tokens or exception text.

Off, ``span`` is a shared no-op context and nothing of the SDK is imported.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "ATTRIBUTES",
    "HEADER_VARIABLES",
    "TRACEPARENT",
    "Tracing",
    "annotate",
    "configure",
    "enabled",
    "failed",
    "span",
    "stop",
    "trace_context",
]

#: The ``_meta`` key the W3C trace context travels in (MCP 2026-07-28: ``traceparent``).
TRACEPARENT = "traceparent"
#: The variables that turn tracing on (the OpenTelemetry SDK's own names).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
#: The variables holding the exporter's headers (often a collector's credential): read from the
#: environment ``configure`` is given, so that a node may keep them out of its own (ADR 0046).
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")

#: Every attribute a span may carry: content-free names, set only through ``span``.
ATTRIBUTES = frozenset(
    {
        "meshnav.address",
        "meshnav.principal",
        "meshnav.machine",
        "meshnav.role",
        "meshnav.tool",
        "meshnav.error",
        "meshnav.confirmation",
        "mcp.method.name",
    }
)


class Tracing:
    """This process's tracer while tracing is on; its provider is flushed when it stops."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer("meshnav")

    def shutdown(self) -> None:
        """Export what is buffered, then stop (a clean stop loses no span)."""
        self.provider.shutdown()


class _Process:
    """This process's tracing: ``None`` while off."""

    tracing: Tracing | None = None


def enabled() -> bool:
    return _Process.tracing is not None


def configure(service: str, environ: Mapping[str, str] | None = None) -> Tracing | None:
    """Turn tracing on for this process when an OTLP endpoint is set; ``None`` (and nothing
    imported) otherwise. ``service`` names the process in its spans' resource unless
    ``OTEL_SERVICE_NAME`` does."""
    stop()  # a process traces through one provider at a time
    env = os.environ if environ is None else environ
    if not any(env.get(name) for name in ENDPOINT_VARIABLES):
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.util.re import parse_env_headers

    name = env.get("OTEL_SERVICE_NAME") or service
    given = next((env[variable] for variable in HEADER_VARIABLES if env.get(variable)), "")
    headers = dict(parse_env_headers(given, liberal=True)) if given else None
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(headers=headers)))
    _Process.tracing = Tracing(provider)
    return _Process.tracing


def stop() -> None:
    """Flush and stop this process's tracing, if on."""
    current, _Process.tracing = _Process.tracing, None
    if current is not None:
        current.shutdown()


#: What ``span`` gives while tracing is off: one shared, reusable no-op.
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


def span(
    name: str, *, parent: Mapping[str, Any] | None = None, kind: str = "internal", **attributes: Any
) -> contextlib.AbstractContextManager[Span | None]:
    """A span of this process, a child of the current one, or of ``parent``'s W3C trace context
    (a ``_meta``) when given; attributes by their short names (``address`` is
    ``meshnav.address``). Off, a no-op that yields ``None``."""
    if (tracing := _Process.tracing) is None:
        return _OFF
    return _started(tracing, name, parent, kind, attributes)


@contextlib.contextmanager
def _started(
    tracing: Tracing,
    name: str,
    parent: Mapping[str, Any] | None,
    kind: str,
    attributes: Mapping[str, Any],
) -> Iterator[Span]:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    named = {_attribute(key): value for key, value in attributes.items() if value is not None}
    context = None if parent is None else _extract(parent)
    # no exception text on a span: an error is its code (``failed``), set by the code that knows it
    with tracing.tracer.start_as_current_span(
        name,
        context=context,
        kind=SpanKind[kind.upper()],
        attributes=named,
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException:
            current.set_status(Status(StatusCode.ERROR))
            raise


def _attribute(key: str) -> str:
    name = "mcp.method.name" if key == "method" else f"meshnav.{key}"
    if name not in ATTRIBUTES:
        raise ValueError(f"not a span attribute meshnav sets: {key}")
    return name


def failed(current: Span | None, code: str) -> None:
    """Mark ``current`` failed with a SPEC §9 code (the only thing an error says on a span)."""
    if current is None:
        return
    from opentelemetry.trace import Status, StatusCode

    current.set_attribute("meshnav.error", code)
    current.set_status(Status(StatusCode.ERROR))


def annotate(**attributes: Any) -> None:
    """Set attributes (short names, as ``span`` takes them) on the current span, if tracing."""
    if _Process.tracing is None:
        return
    from opentelemetry.trace import get_current_span

    current = get_current_span()
    for key, value in attributes.items():
        if value is not None:
            current.set_attribute(_attribute(key), value)


def trace_context() -> dict[str, str]:
    """The current span's W3C trace context (``traceparent``, and ``tracestate`` when set), to
    carry in a request's ``_meta``; empty when tracing is off."""
    if _Process.tracing is None:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier


def _extract(meta: Mapping[str, Any]) -> Any:
    """The trace context ``meta`` carries, or ``None`` (a root span) when it carries none that
    parses: only ``traceparent`` and ``tracestate`` are read, as strings."""
    from opentelemetry.trace import get_current_span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {k: v for k in (TRACEPARENT, "tracestate") if isinstance(v := meta.get(k), str)}
    if TRACEPARENT not in carrier:
        return None
    context = TraceContextTextMapPropagator().extract(carrier)
    return context if get_current_span(context).get_span_context().is_valid else None
