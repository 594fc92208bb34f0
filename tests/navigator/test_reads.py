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
from navigator.reads import Progress, long_read, short_read
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


async def test_a_long_read_goes_on_while_it_reads_and_is_given_up_when_it_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A whole catalogue's load takes longer than any one read's bound, so its bound is on a
    wait between rows. It had none: on a connection that never answered, the load (and the
    follow loop, and every later change) waited for good."""
    monkeypatch.setattr(navigator.reads, "STATEMENT_TIMEOUT_S", 0.3)
    registry: Any = SimpleNamespace(reads_inline=False)
    thawed = threading.Event()

    def reading(progress: Progress, rows: int, then_stop: bool) -> int:
        for _ in range(rows):  # twice the bound in all, a tenth of it between rows
            time.sleep(0.03)
            progress.tick()
        if then_stop:
            thawed.wait(30)  # the connection went silent
        progress.done()
        time.sleep(0.6)  # building what was read: no rows, no bound
        return rows

    with anyio.fail_after(10):
        assert await long_read(registry, reading, 20, False) == 20
        started = time.monotonic()
        with pytest.raises(RegistryUnavailable):
            await long_read(registry, reading, 5, True)
    assert time.monotonic() - started < 5
    thawed.set()


async def test_a_long_reads_own_error_is_raised_as_itself() -> None:
    registry: Any = SimpleNamespace(reads_inline=False)

    def failing(progress: Progress) -> None:
        raise RegistryUnavailable("lost")

    with pytest.raises(RegistryUnavailable, match="lost"):
        await long_read(registry, failing)
