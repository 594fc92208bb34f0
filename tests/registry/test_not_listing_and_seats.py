"""On SQLite and PostgreSQL: an assignment's cause for not listing is kept, read in bulk and
cleared by a registration that lists (ADR 0057); a seat is removed with the assignment that held
it retired."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from registry import CatalogStore, NotFound, Registry
from registry.catalog_rows import read_rows
from tests.registry.test_catalog import tool


def test_a_cause_for_not_listing_is_kept_until_a_list_comes(registry: Registry) -> None:
    with registry.transaction() as session:
        CatalogStore(session).put_assignment(
            "web1", "up", module="http", tools=[], not_listing="connection refused"
        )
    with registry.read_transaction() as session:
        (record,) = CatalogStore(session).assignments()
        (row,) = read_rows(session.connection())
    assert (record.not_listing, row.not_listing, record.retired) == (
        "connection refused",
        "connection refused",
        False,
    )
    with registry.transaction() as session:
        CatalogStore(session).put_assignment("web1", "up", module="http", tools=[tool("ping")])
    with registry.read_transaction() as session:
        (record,) = CatalogStore(session).assignments()
    assert record.not_listing is None and [t.name for t in record.tools] == ["ping"]


def test_a_removed_seat_retires_the_assignment_that_held_it(registry: Registry) -> None:
    with registry.transaction() as session:
        CatalogStore(session).place_seat("notes", "web1", "notes")
        CatalogStore(session).remove_seat("notes")
    with registry.read_transaction() as session:
        store = CatalogStore(session)
        assert store.seats() == {}
        (record,) = store.assignments()
        rows = session.execute(text("SELECT COUNT(*) FROM assignments")).scalar_one()
    assert record.retired and rows == 1  # retired, not removed
    with registry.transaction() as session, pytest.raises(NotFound):
        CatalogStore(session).remove_seat("notes")
