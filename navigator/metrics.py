"""Counts and timings for ``/metrics`` (Prometheus text): no content, ever."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable

__all__ = ["METRICS", "Metrics"]

#: Latency histogram buckets, in seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _label(value: str) -> str:
    """A label value as the Prometheus text format writes one: backslash, quote and newline
    escaped, so that no value can end its label or its line."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], int] = defaultdict(int)
        self._buckets: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
        self._sums: dict[str, float] = defaultdict(float)
        #: Gauges computed when scraped (e.g. machines by status).
        self.gauges: dict[str, Callable[[], dict[str, float]]] = {}
        #: Counters read when scraped, by reason (e.g. audit events dropped).
        self.counters: dict[str, Callable[[], dict[str, int]]] = {}

    def observe_tool(self, tool: str, code: str, seconds: float) -> None:
        with self._lock:
            self._calls[(tool, code)] += 1
            buckets = self._buckets[tool]
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    buckets[index] += 1
                    break
            else:
                buckets[-1] += 1
            self._sums[tool] += seconds

    def render(self) -> str:
        lines = [
            "# HELP meshnav_tool_requests_total Walker tool requests by tool and outcome code.",
            "# TYPE meshnav_tool_requests_total counter",
        ]
        with self._lock:
            for (tool, code), count in sorted(self._calls.items()):
                lines.append(
                    f"meshnav_tool_requests_total"
                    f'{{tool="{_label(tool)}",code="{_label(code)}"}} {count}'
                )
            lines += [
                "# HELP meshnav_tool_seconds Walker tool latency.",
                "# TYPE meshnav_tool_seconds histogram",
            ]
            for tool, buckets in sorted(self._buckets.items()):
                label = _label(tool)
                running = 0
                for bound, count in zip(BUCKETS, buckets, strict=False):
                    running += count
                    lines.append(
                        f'meshnav_tool_seconds_bucket{{tool="{label}",le="{bound}"}} {running}'
                    )
                running += buckets[-1]
                lines.append(f'meshnav_tool_seconds_bucket{{tool="{label}",le="+Inf"}} {running}')
                lines.append(f'meshnav_tool_seconds_sum{{tool="{label}"}} {self._sums[tool]:.6f}')
                lines.append(f'meshnav_tool_seconds_count{{tool="{label}"}} {running}')
        for name, read in sorted(self.gauges.items()):
            lines.append(f"# TYPE {name} gauge")
            for label, value in sorted(read().items()):
                lines.append(f'{name}{{status="{_label(label)}"}} {value}')
        for name, counted in sorted(self.counters.items()):
            lines.append(f"# TYPE {name} counter")
            for label, count in sorted(counted().items()):
                lines.append(f'{name}{{reason="{_label(label)}"}} {count}')
        return "\n".join(lines) + "\n"


METRICS = Metrics()
