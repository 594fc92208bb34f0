"""A machine's status is judged only over time the registry took writes (ADR 0031)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from navigator.catalog.machines import ANSWERING, MISSED, NOT_ANSWERING, UNRECORDED
from navigator.catalog.view import Catalog
from navigator.console.layout import heartbeats_note
from registry import Registry, RegistryUnavailable
from tests.navigator.meshes import node_machines


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    with node_machines(tmp_path, 5, "db1") as store:
        yield store


def _fail_one_write(catalog: Catalog) -> None:
    with pytest.raises(RegistryUnavailable), catalog.writes.watch():
        raise RegistryUnavailable()


async def test_a_machine_without_heartbeats_for_three_intervals_is_silent(
    registry: Registry,
) -> None:
    catalog = Catalog(registry)
    await catalog.load()
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert catalog.machine_status("db1", later) == NOT_ANSWERING
    assert catalog.heartbeats("db1", later) == MISSED
    assert catalog.heartbeats("db1", datetime.now(UTC)) is None


async def test_heartbeats_the_registry_could_not_record_are_no_silence(
    registry: Registry,
) -> None:
    catalog = Catalog(registry)
    await catalog.load()
    _fail_one_write(catalog)
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert catalog.machine_status("db1", later) == ANSWERING
    assert catalog.heartbeats("db1", later) == UNRECORDED
    assert catalog.silent_since("db1") is None
    with catalog.writes.watch():  # a write lands: silence counts again
        pass
    assert catalog.machine_status("db1", later) == NOT_ANSWERING
    assert catalog.writes.failing_since is None


def test_the_console_says_why_in_words() -> None:
    assert "registry cannot be written" in heartbeats_note(UNRECORDED)
    assert "no heartbeat" in heartbeats_note(MISSED)
    assert heartbeats_note(None) == ""
