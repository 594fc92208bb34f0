"""After the registry takes writes again, each machine is judged from its own first heartbeat.

A 10–20 s write lock left every machine ``not answering (missed)`` for 0.1–4 s once it ended:
the first write that landed cleared the failing state, and machines whose next heartbeat had not
come round yet were judged as if none had come for the whole outage (ADR 0052). Judged here on
the in-process catalogue with the writes' clock injected, so the moments are exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from navigator.catalog.machines import ANSWERING, MISSED, NOT_ANSWERING, UNRECORDED
from navigator.catalog.registry_writes import RegistryWrites
from navigator.catalog.view import Catalog
from registry import Registry, RegistryUnavailable
from tests.navigator.meshes import node_machines

INTERVAL_S = 1.0
T0 = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def at(self, seconds: float) -> datetime:
        self.now = T0 + timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    with node_machines(tmp_path, INTERVAL_S, "a", "b", "dead") as store:
        yield store


@pytest.fixture
async def catalog(registry: Registry) -> tuple[Catalog, Clock, list[tuple[str, str]]]:
    clock = Clock()
    catalog = Catalog(registry, RegistryWrites(clock=lambda: clock.now))
    await catalog.load()
    events: list[tuple[str, str]] = []
    catalog.on_status = lambda machine, status: events.append((machine, status))
    catalog.note_heartbeat("a", clock.at(0.0))
    catalog.note_heartbeat("b", clock.at(0.4))
    catalog.note_heartbeat("dead", clock.at(0.2))  # and never again
    return catalog, clock, events


def fail_a_write(catalog: Catalog) -> None:
    with pytest.raises(RegistryUnavailable), catalog.writes.watch():
        raise RegistryUnavailable(writes=True)


def land_a_heartbeat(catalog: Catalog, clock: Clock, machine: str, seconds: float) -> None:
    at = clock.at(seconds)
    with catalog.writes.watch():  # a write that landed: watched, and nothing raised
        catalog.note_heartbeat(machine, at)


def statuses(catalog: Catalog, machine: str, start_s: float, end_s: float) -> set[str]:
    """``machine``'s status every 10 ms over the span."""
    steps = round((end_s - start_s) * 100)
    return {
        catalog.machine_status(machine, T0 + timedelta(seconds=start_s + step / 100))
        for step in range(steps + 1)
    }


async def test_a_machine_is_answering_until_its_own_first_heartbeat_after_an_outage(
    catalog: tuple[Catalog, Clock, list[tuple[str, str]]],
) -> None:
    catalog_, clock, events = catalog
    clock.at(0.5)
    fail_a_write(catalog_)  # a 15 s write lock begins
    assert statuses(catalog_, "a", 0.5, 15.5) == {ANSWERING}
    land_a_heartbeat(catalog_, clock, "b", 15.5)  # the lock ends: b's heartbeat lands first
    # a's next heartbeat comes round up to an interval later (later still under load)
    assert statuses(catalog_, "a", 15.5, 17.5) == {ANSWERING}
    assert catalog_.heartbeats("a", T0 + timedelta(seconds=16)) == UNRECORDED
    land_a_heartbeat(catalog_, clock, "a", 16.4)
    assert catalog_.heartbeats("a", T0 + timedelta(seconds=16.5)) is None
    assert (("a", NOT_ANSWERING)) not in events
    assert (("b", NOT_ANSWERING)) not in events


async def test_a_machine_that_died_in_the_outage_is_not_answering_soon_after(
    catalog: tuple[Catalog, Clock, list[tuple[str, str]]],
) -> None:
    """Its silence before the outage counts, and from one interval after writes resume."""
    catalog_, clock, _ = catalog
    clock.at(0.5)
    fail_a_write(catalog_)
    land_a_heartbeat(catalog_, clock, "b", 15.5)
    # 0.3 s before the outage, then from 16.5 s: three intervals are through at 19.2 s
    assert catalog_.machine_status("dead", T0 + timedelta(seconds=19.1)) == ANSWERING
    late = T0 + timedelta(seconds=19.3)
    assert catalog_.machine_status("dead", late) == NOT_ANSWERING
    assert catalog_.heartbeats("dead", late) == MISSED


async def test_writes_that_fail_again_within_the_grace_keep_the_earlier_outage_uncounted(
    catalog: tuple[Catalog, Clock, list[tuple[str, str]]],
) -> None:
    """A registry that takes one write between failures (a disk nearly full): the outages add
    up, rather than the older being counted as silence once the newer ends."""
    catalog_, clock, _ = catalog
    clock.at(0.5)
    fail_a_write(catalog_)
    land_a_heartbeat(catalog_, clock, "b", 10.0)
    clock.at(10.3)
    fail_a_write(catalog_)
    land_a_heartbeat(catalog_, clock, "b", 20.0)
    assert statuses(catalog_, "a", 0.5, 22.0) == {ANSWERING}
    assert catalog_.machine_status("a", T0 + timedelta(seconds=40)) == NOT_ANSWERING
