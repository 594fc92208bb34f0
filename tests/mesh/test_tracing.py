"""The span attributes meshnav sets are a closed list (ADR 0040): a name outside it — an
argument, a query — is refused before any span holds it; tracing is on only with an endpoint."""

from __future__ import annotations

import pytest

from mesh import tracing


def test_tracing_is_on_only_with_an_otlp_endpoint() -> None:
    assert (
        tracing.configure("t", {"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"})
        is None
    )
    assert not tracing.enabled() and tracing.trace_context() == {}


def test_an_attribute_outside_the_list_is_refused() -> None:
    assert tracing.configure("t", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9"})
    try:
        with pytest.raises(ValueError, match="not a span attribute"), tracing.span("s", x="{}"):
            pass
        with pytest.raises(ValueError, match="not a span attribute"):
            tracing.annotate(query="secret")
        assert tracing.trace_context() == {}  # no span is current
    finally:
        tracing.stop()
    assert not tracing.enabled()
