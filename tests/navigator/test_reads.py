"""Registry reads from the event loop: a registry that never answers is unavailable in bounded
time (a frozen or partitioned PostgreSQL keeps its connections open; TCP alone does not notice)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

import navigator.reads
from navigator.reads import short_read
from registry import RegistryUnavailable


async def test_a_read_the_registry_never_answers_is_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(navigator.reads, "STATEMENT_TIMEOUT_S", 0.2)
    registry: Any = SimpleNamespace(reads_inline=False)
    thawed = threading.Event()

    def frozen() -> str:
        thawed.wait(30)  # a server that holds the connection and says nothing
        return "late"

    started = time.monotonic()
    with anyio.fail_after(10), pytest.raises(RegistryUnavailable):
        await short_read(registry, frozen)
    waited = time.monotonic() - started
    thawed.set()  # the abandoned worker finishes on its own
    assert waited < 5  # given up near its bound (0.2 s), not when the server woke
    assert await short_read(registry, lambda: "answered") == "answered"
