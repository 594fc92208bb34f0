"""``/metrics`` (SPEC §12): Prometheus text, counts and timings, no content."""

from __future__ import annotations

from navigator.metrics import Metrics


def test_metric_labels_cannot_end_their_label_or_line() -> None:
    """Label values are escaped as the Prometheus text format says, whatever they hold."""
    metrics = Metrics()
    metrics.observe_tool('call"x', 'bad",leak="1"} 1\nmeshnav_injected_total 42', 0.01)
    metrics.gauges["meshnav_machines"] = lambda: {'odd"\n': 1.0}
    lines = metrics.render().splitlines()
    assert not any(line.startswith("meshnav_injected_total") for line in lines)
    assert (
        'meshnav_tool_requests_total{tool="call\\"x",'
        'code="bad\\",leak=\\"1\\"} 1\\nmeshnav_injected_total 42"} 1' in lines
    )
    assert 'meshnav_machines{status="odd\\"\\n"} 1.0' in lines
